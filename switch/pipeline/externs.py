"""Stateful v1model externs: registers, counters, meters (indirect and direct).

These objects are the switch state that packets and the control plane share. They are
plain Python objects holding lists so that generated code can index them directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableSequence, Sequence
from dataclasses import dataclass, field

from .errors import ControlPlaneError

GREEN, YELLOW, RED = 0, 1, 2


class Register:
    """``register<T>(size)``: out-of-range reads return 0 and writes are ignored (BMv2)."""

    def __init__(self, name: str, size: int, width: int, signed: bool = False, cells: bool = True) -> None:
        self.name = name
        self.size = size
        self.width = width
        self.signed = signed
        self.cells: list[int] = [0] * size if cells else []
        """The values; empty (``cells`` False) when an executor keeps them itself."""

    def _check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise ControlPlaneError(
                f"register '{self.name}': index {index} out of range (size {self.size})"
            )

    def read(self, index: int) -> int:
        """Cell ``index`` (control plane; raises on an out-of-range index)."""
        self._check(index)
        return self.cells[index]

    def write(self, index: int, value: int) -> None:
        """Set cell ``index`` to ``value`` truncated to the register width."""
        self._check(index)
        v = value & ((1 << self.width) - 1)
        if self.signed and v >> (self.width - 1):
            v -= 1 << self.width
        self.cells[index] = v

    def read_all(self) -> list[int]:
        """A copy of all cells."""
        return list(self.cells)

    def _check_range(self, start: int, n: int) -> None:
        if n < 0 or not (0 <= start and start + n <= self.size):
            raise ControlPlaneError(
                f"register '{self.name}': cells {start}..{start + n - 1} are outside 0..{self.size - 1}")

    def read_range(self, start: int, n: int) -> list[int]:
        """Cells ``start..start+n-1``, unsigned (control plane, one call for a whole range)."""
        self._check_range(start, n)
        mask = (1 << self.width) - 1
        return [v & mask for v in self.cells[start:start + n]]

    def write_range(self, start: int, values: Sequence[int]) -> None:
        """Set cells ``start..`` to ``values``, each truncated to the register width."""
        self._check_range(start, len(values))
        for i, value in enumerate(values):
            self.write(start + i, value)

    def reset(self) -> None:
        """Set every cell to 0."""
        self.cells[:] = [0] * self.size


class Counter:
    """``counter(size, type)``/``direct_counter(type)``: packets and bytes per index.

    The cells are any indexable storage: Python lists by default, or arrays an executor
    owns (the native one passes its C buffers), so the counting rules are written once.
    """

    def __init__(self, name: str, size: int, kind: str,
                 packets: MutableSequence[int] | None = None, nbytes: MutableSequence[int] | None = None) -> None:
        self.name = name
        self.size = size
        self.kind = kind  # 'packets' | 'bytes' | 'packets_and_bytes'
        self._p: MutableSequence[int] = [0] * size if packets is None else packets
        self._b: MutableSequence[int] = [0] * size if nbytes is None else nbytes

    @property
    def packets(self) -> MutableSequence[int]:
        """Packet count per index (the live storage, which generated code indexes)."""
        return self._p

    @property
    def bytes(self) -> MutableSequence[int]:
        """Byte count per index (the live storage, which generated code indexes)."""
        return self._b

    def count(self, index: int, nbytes: int) -> None:
        """Count one packet of ``nbytes`` at ``index``; out of range is ignored."""
        if 0 <= index < self.size:
            self._p[index] += 1
            self._b[index] += nbytes

    def read(self, index: int) -> tuple[int, int]:
        """(packets, bytes) at ``index``."""
        if not 0 <= index < self.size:
            raise ControlPlaneError(f"counter '{self.name}': index {index} out of range (size {self.size})")
        return int(self._p[index]), int(self._b[index])

    def write(self, index: int, packets: int, nbytes: int) -> None:
        """Set the values at ``index``."""
        self.read(index)
        self._p[index] = packets
        self._b[index] = nbytes

    def reset(self) -> None:
        """Zero every cell."""
        self._p[0:self.size] = [0] * self.size
        self._b[0:self.size] = [0] * self.size


@dataclass(slots=True)
class MeterCell:
    """Two-rate three-color marker state (RFC 2698) of one meter index.

    Rates are in units (packets or bytes) per microsecond, as BMv2's ``meter_set_rates``.
    An unconfigured cell marks everything GREEN.
    """

    cir: float = 0.0
    cburst: int = 0
    pir: float = 0.0
    pburst: int = 0
    configured: bool = False
    tc: float = 0.0
    tp: float = 0.0
    last_us: float | None = None

    def execute(self, now_us: float, amount: int) -> int:
        if not self.configured:
            return GREEN
        if self.last_us is None:
            self.last_us = now_us
        dt = max(0.0, now_us - self.last_us)
        self.last_us = now_us
        self.tc = min(self.cburst, self.tc + dt * self.cir)
        self.tp = min(self.pburst, self.tp + dt * self.pir)
        if self.tp < amount:
            return RED
        if self.tc < amount:
            self.tp -= amount
            return YELLOW
        self.tp -= amount
        self.tc -= amount
        return GREEN


class Meter:
    """``meter(size, type)``/``direct_meter``: colors GREEN=0, YELLOW=1, RED=2."""

    def __init__(self, name: str, size: int, kind: str, clock: Callable[[], float] | None = None) -> None:
        self.name = name
        self.size = size
        self.kind = kind  # 'packets' | 'bytes'
        self.cells: list[MeterCell] = [MeterCell() for _ in range(size)]
        self.clock = clock or (lambda: time.monotonic() * 1e6)

    def execute(self, index: int, nbytes: int) -> int:
        """Color of one packet of ``nbytes`` at ``index`` (out of range: GREEN)."""
        if not 0 <= index < self.size:
            return GREEN
        amount = 1 if self.kind == "packets" else nbytes
        return self.cells[index].execute(self.clock(), amount)

    def set_rates(self, index: int, cir: float, cburst: int, pir: float, pburst: int) -> None:
        """Configure index ``index``: committed and peak rate (units/us) and bursts (units)."""
        if not 0 <= index < self.size:
            raise ControlPlaneError(f"meter '{self.name}': index {index} out of range (size {self.size})")
        self.cells[index] = MeterCell(cir, cburst, pir, pburst, True, float(cburst), float(pburst), None)

    def get_rates(self, index: int) -> tuple[float, int, float, int] | None:
        """(cir, cburst, pir, pburst) or None when unconfigured."""
        c = self.cells[index]
        return (c.cir, c.cburst, c.pir, c.pburst) if c.configured else None


@dataclass
class DigestMessage:
    """One ``digest<T>(receiver, data)`` call: the control-plane name of T and its field values."""

    name: str
    receiver: int
    fields: dict[str, int] = field(default_factory=dict)
