"""innet's register-range entity: many consecutive cells of one register in one P4Runtime entity.

P4Runtime's ``RegisterEntry`` carries one cell; loading a model's parameters into the
switch's registers (a million cells and as many momentum cells) one entity per cell took
minutes. innet-switch therefore also accepts, in ``Write`` and ``Read``, an ``ExternEntry``
(P4Runtime's entity for architecture-specific externs) of type :data:`EXTERN_TYPE_ID`:

* ``extern_id``: the register's P4Info id;
* ``entry``: a ``google.protobuf.Any`` holding a ``BytesValue``: the first cell (8 bytes),
  the number of cells ``n`` (8 bytes), then, in a write (``MODIFY``) and in a read's answer,
  the ``n`` cells, ``cell_bytes(bitwidth)`` bytes each (1, 2, 4 or 8); all big-endian. A
  read selector stops after the count.

Cells beyond the register are an error (``OUT_OF_RANGE``), as for ``RegisterEntry``.
A switch without the extension (BMv2) answers ``UNIMPLEMENTED``; the controller then falls
back to one ``RegisterEntry`` per cell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from finsy.proto import p4r
from google.protobuf import any_pb2, wrappers_pb2

EXTERN_TYPE_ID = 0xA1
"""``extern_type_id`` of the register-range entity (within P4Runtime's architecture-specific 0x81..0xFE)."""
MAX_CELLS = 1 << 18
"""Cells per entity a writer should not exceed (1 MiB of 32-bit cells: a Write stays under gRPC's 4 MiB)."""

if TYPE_CHECKING:  # numpy is imported by the functions that use it: a switch starts without it (0.1 s)
    import numpy as np
    import numpy.typing as npt

    U64 = npt.NDArray[np.uint64]


class RegisterRangeError(ValueError):
    """A malformed register-range entity; the message says what is wrong."""


def cell_bytes(bitwidth: int) -> int:
    """Bytes per cell on the wire for a register of ``bitwidth`` bits."""
    for n in (1, 2, 4, 8):
        if bitwidth <= 8 * n:
            return n
    raise RegisterRangeError(f"register ranges carry cells of at most 64 bits, not {bitwidth}")


def pack(values: npt.ArrayLike, bitwidth: int) -> bytes:
    """Cells as big-endian bytes (each value masked to ``bitwidth``)."""
    import numpy as np

    n = cell_bytes(bitwidth)
    cells = np.asarray(values).astype(np.int64).astype(np.uint64) & np.uint64((1 << bitwidth) - 1)
    return cells.astype(f">u{n}").tobytes()


def unpack(data: bytes, bitwidth: int) -> U64:
    import numpy as np

    n = cell_bytes(bitwidth)
    if len(data) % n:
        raise RegisterRangeError(f"register range of {len(data)} bytes is not whole cells of {n} bytes")
    return np.frombuffer(data, dtype=f">u{n}").astype(np.uint64)


def _entity(register_id: int, data: bytes) -> p4r.Entity:
    payload = any_pb2.Any()
    payload.Pack(wrappers_pb2.BytesValue(value=data))
    return p4r.Entity(extern_entry=p4r.ExternEntry(extern_type_id=EXTERN_TYPE_ID, extern_id=register_id,
                                                   entry=payload))


def write_entity(register_id: int, start: int, values: npt.ArrayLike, bitwidth: int) -> p4r.Entity:
    """A write of cells ``start..`` (also a read's answer)."""
    cells = pack(values, bitwidth)
    n = len(cells) // cell_bytes(bitwidth)
    return _entity(register_id, start.to_bytes(8, "big") + n.to_bytes(8, "big") + cells)


def read_entity(register_id: int, start: int, count: int) -> p4r.Entity:
    """A read selector of cells ``start..start+count-1``."""
    return _entity(register_id, start.to_bytes(8, "big") + count.to_bytes(8, "big"))


def parse(entry: p4r.ExternEntry, bitwidth: int) -> tuple[int, int, U64 | None]:
    """(first cell, number of cells, the cells; None for a read selector)."""
    if not entry.entry.Is(wrappers_pb2.BytesValue.DESCRIPTOR):
        raise RegisterRangeError(f"register range entry holds {entry.entry.type_url or 'nothing'}, "
                                 "expected google.protobuf.BytesValue")
    data = wrappers_pb2.BytesValue()
    entry.entry.Unpack(data)
    raw = data.value
    if len(raw) < 16:
        raise RegisterRangeError(f"register range of {len(raw)} bytes has no 16-byte header (first cell, count)")
    start, count = int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:16], "big")
    if len(raw) == 16:
        return start, count, None
    cells = unpack(raw[16:], bitwidth)
    if len(cells) != count:
        raise RegisterRangeError(f"register range says {count} cells but holds {len(cells)}")
    return start, count, cells


def runs(indexes: Sequence[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive indexes, in order: (position in ``indexes``, length)."""
    out: list[tuple[int, int]] = []
    at = 0
    for i in range(1, len(indexes) + 1):
        if i == len(indexes) or indexes[i] != indexes[i - 1] + 1 or i - at >= MAX_CELLS:
            out.append((at, i - at))
            at = i
    return out
