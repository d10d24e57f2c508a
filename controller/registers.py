"""Register access: P4Runtime ``RegisterEntry`` (innet's target), or BMv2's Thrift CLI.

BMv2's P4Runtime server answers UNIMPLEMENTED to RegisterEntry reads and writes
(p4lang/PI, open since 2018).  When a switch spec names a Thrift port, the controller
then falls back to ``simple_switch_CLI --thrift-port PORT`` and its ``register_read`` /
``register_write`` commands, fed on stdin to one CLI process kept per switch
(``innet.controller.cli_session``).  Without a Thrift
port the UNIMPLEMENTED error is raised with that hint.
"""

from __future__ import annotations

import logging
import re
import subprocess
from typing import Callable, Protocol, Sequence

import grpc
import numpy as np
import numpy.typing as npt
from finsy.proto import p4r

from innet.controller.cli_session import CliSession, exited, missing_cli
from innet.controller.client import P4RuntimeClient
from innet.controller.entities import describer, register_reads, register_writes
from innet.controller.errors import ControllerError, UnimplementedError, ValueRangeError, WriteError
from innet.controller.schema import P4Schema, RegisterInfo, decode
from innet.switch.p4rt_codec import register_range

LOG = logging.getLogger(__name__)


class RegisterBackend(Protocol):
    def read(self, info: RegisterInfo, indexes: range) -> list[int]: ...

    def write(self, cells: dict[str, Sequence[tuple[int, int]]]) -> None: ...

    def write_range(self, info: RegisterInfo, start: int, values: npt.NDArray[np.int64]) -> None: ...


class P4RuntimeRegisters:
    """Register cells over P4Runtime: innet's register-range entities (many cells per entity,
    ``innet.switch.p4rt_codec.register_range``) where the switch has them, else one
    ``RegisterEntry`` per cell (decided at the first UNIMPLEMENTED answer, then kept)."""

    def __init__(self, client: P4RuntimeClient, schema: P4Schema) -> None:
        self.client, self.schema = client, schema
        self.ranges = True
        """The switch answers register-range entities (False after its first UNIMPLEMENTED)."""

    def _unimplemented(self, error: ControllerError) -> bool:
        codes = {f.code for f in error.failures} if isinstance(error, WriteError) else {getattr(error, "code", None)}
        if codes == {grpc.StatusCode.UNIMPLEMENTED}:
            LOG.info("switch %s: no register-range entities, one RegisterEntry per cell", self.client.address)
            self.ranges = False
            return True
        return False

    def read(self, info: RegisterInfo, indexes: range) -> list[int]:
        if self.ranges and indexes.step == 1 and len(indexes) > 1:
            try:
                entities = self.client.read([register_range.read_entity(info.id, indexes.start, len(indexes))])
            except ControllerError as error:
                if not self._unimplemented(error):
                    raise
            else:
                cells: list[int] = []
                for entity in entities:
                    _, _, got = register_range.parse(entity.extern_entry, info.bitwidth)
                    if got is not None:
                        cells.extend(int(v) for v in got)
                if len(cells) != len(indexes):
                    raise ControllerError(f"register {info.name!r}: the switch returned {len(cells)} cells of "
                                          f"{len(indexes)}")
                return cells
        return self._read_cells(info, indexes)

    def write_range(self, info: RegisterInfo, start: int, values: npt.NDArray[np.int64]) -> None:
        """Cells ``start..`` of one register from an array (entities of up to MAX_CELLS cells)."""
        _check_fit(info, values)
        if self.ranges:
            updates = []
            for at in range(0, len(values), register_range.MAX_CELLS):
                entity = register_range.write_entity(info.id, start + at, values[at:at + register_range.MAX_CELLS],
                                                     info.bitwidth)
                updates.append(p4r.Update(type=p4r.Update.MODIFY, entity=entity))
            try:
                self.client.write(updates, describer(self.schema))
                return
            except WriteError as error:
                if not self._unimplemented(error):
                    raise
        self._write_cells({info.name: [(start + i, int(v)) for i, v in enumerate(values)]})

    def _read_cells(self, info: RegisterInfo, indexes: range) -> list[int]:
        values: dict[int, int] = {}
        for entity in self.client.read(register_reads(self.schema, info.name, indexes)):
            r = entity.register_entry
            values[r.index.index] = decode(r.data.bitstring)
        try:
            return [values[i] for i in indexes]
        except KeyError as missing:
            raise ControllerError(f"register {info.name!r}: the switch returned no cell {missing}") from None

    def write(self, cells: dict[str, Sequence[tuple[int, int]]]) -> None:
        if not self.ranges:
            return self._write_cells(cells)
        for name, items in cells.items():
            if not items:
                continue
            info = self.schema.register(name)
            indexes = [i for i, _ in items]
            values = np.fromiter((v for _, v in items), dtype=np.int64, count=len(items))
            for at, n in register_range.runs(indexes):
                self.write_range(info, indexes[at], values[at:at + n])
        return None

    def _write_cells(self, cells: dict[str, Sequence[tuple[int, int]]]) -> None:
        updates: list[p4r.Update] = []
        for name, items in cells.items():
            updates.extend(register_writes(self.schema, name, items))
        try:
            self.client.write(updates, describer(self.schema))
        except WriteError as error:
            codes = {f.code for f in error.failures}
            if codes == {grpc.StatusCode.UNIMPLEMENTED}:
                raise UnimplementedError(str(error), grpc.StatusCode.UNIMPLEMENTED) from None
            raise


def _check_fit(info: RegisterInfo, values: npt.NDArray[np.int64]) -> None:
    """ValueRangeError for the first value that does not fit the register (as ``schema.fit``)."""
    w = info.bitwidth
    if w >= 63 or values.size == 0:
        return
    low, high = int(values.min()), int(values.max())
    what = f"register {info.name!r}"
    if low < -(1 << (w - 1)):
        raise ValueRangeError(f"{what}: value {low} does not fit a signed {w}-bit field (minimum {-(1 << (w - 1))})")
    if high >= 1 << w:
        raise ValueRangeError(f"{what}: value {high} does not fit {w} bits (maximum {(1 << w) - 1})")


Runner = Callable[[list[str], str], str]
"""Runs a command with stdin text and returns stdout (raises on failure)."""


def run_subprocess(argv: list[str], stdin: str) -> str:
    """One process per call (:class:`CliSession` keeps one per switch instead)."""
    try:
        result = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise missing_cli(argv[0]) from None
    except subprocess.TimeoutExpired:
        raise ControllerError(f"register fallback: {' '.join(argv)} did not finish within 120 s") from None
    if result.returncode != 0:
        # simple_switch_CLI prints its connection failure on stdout
        raise exited(argv, result.returncode, result.stderr.strip() or result.stdout)
    return result.stdout


_CLI_ERROR = re.compile(r"(?:RuntimeCmd:\s*)*((?:Error: |Invalid \w+ operation ).*)")


def _cli_error(out: str) -> str | None:
    """The first error line simple_switch_CLI printed (``Error: ...`` or ``Invalid register
    operation (CODE)``, its two formats for a failed command), None when there is none."""
    for line in out.splitlines():
        m = _CLI_ERROR.search(line)
        if m:
            return m.group(1).strip()
    return None


_CELL = re.compile(r"(\S+)\[(\d+)\]\s*=\s*(-?\d+)")
_ALL = re.compile(r"(?:RuntimeCmd:\s*)?([\w.$]+)\s*=\s*(-?\d+(?:\s*,\s*-?\d+)*)")


class ThriftCliRegisters:
    """``simple_switch_CLI`` register commands (BMv2), by default in one long-lived CLI
    process (:class:`CliSession`; ``close`` ends it)."""

    def __init__(self, thrift_port: int, cli: str = "simple_switch_CLI", runner: Runner | None = None) -> None:
        self.thrift_port, self.cli = thrift_port, cli
        self.runner: Runner = CliSession() if runner is None else runner

    def close(self) -> None:
        """End the CLI process (when this object runs one)."""
        if isinstance(self.runner, CliSession):
            self.runner.close()

    def _run(self, commands: list[str]) -> str:
        return self.runner([self.cli, "--thrift-port", str(self.thrift_port)], "\n".join(commands) + "\n")

    def _checked(self, commands: list[str], what: str) -> str:
        out = self._run(commands)
        error = _cli_error(out)
        if error is not None:
            raise ControllerError(f"{what} via simple_switch_CLI: {error}")
        return out

    def read(self, info: RegisterInfo, indexes: range) -> list[int]:
        mask = (1 << info.bitwidth) - 1
        what = f"register {info.name!r}"
        if len(indexes) * 4 >= info.size:
            out = self._checked([f"register_read {info.name}"], what)
            for line in out.splitlines():
                m = _ALL.search(line)
                if m and m.group(1) == info.name:
                    values = [int(v) & mask for v in m.group(2).split(",")]
                    return [values[i] for i in indexes]
            raise ControllerError(f"register {info.name!r}: no values in simple_switch_CLI output: {out[:300]!r}")
        out = self._checked([f"register_read {info.name} {i}" for i in indexes], what)
        got = {int(m.group(2)): int(m.group(3)) & mask for m in _CELL.finditer(out) if m.group(1) == info.name}
        missing = [i for i in indexes if i not in got]
        if missing:
            raise ControllerError(f"register {info.name!r}: simple_switch_CLI gave no value for index {missing[0]}: "
                                  f"{out[:300]!r}")
        return [got[i] for i in indexes]

    def write(self, cells: dict[str, Sequence[tuple[int, int]]]) -> None:
        commands = [f"register_write {name} {i} {v}" for name, items in cells.items() for i, v in items]
        if commands:
            self._checked(commands, "register write")

    def write_range(self, info: RegisterInfo, start: int, values: npt.NDArray[np.int64]) -> None:
        self.write({info.name: [(start + i, int(v) & ((1 << info.bitwidth) - 1)) for i, v in enumerate(values)]})

    def reset(self, names: Sequence[str]) -> None:
        """Zero every cell of each register (``register_reset``, one command per register)."""
        if names:
            self._checked([f"register_reset {name}" for name in names], "register reset")


class AutoRegisters:
    """P4Runtime first; on UNIMPLEMENTED, the Thrift CLI when a port is configured
    (decided once, at the first UNIMPLEMENTED, then kept)."""

    def __init__(self, p4runtime: P4RuntimeRegisters, fallback: RegisterBackend | None, address: str) -> None:
        self.p4runtime, self.fallback, self.address = p4runtime, fallback, address
        self.active: RegisterBackend = p4runtime

    def _switch(self, error: UnimplementedError) -> RegisterBackend:
        if self.fallback is None:
            raise UnimplementedError(
                f"{error} -- registers are not accessible over P4Runtime on this switch (BMv2 answers "
                "UNIMPLEMENTED); give its Thrift port (SwitchEndpoint.thrift_port / --thrift-port) to use "
                "simple_switch_CLI instead", error.code) from None
        LOG.info("switch %s: RegisterEntry is UNIMPLEMENTED, using simple_switch_CLI", self.address)
        self.active = self.fallback
        return self.fallback

    def read(self, info: RegisterInfo, indexes: range) -> list[int]:
        try:
            return self.active.read(info, indexes)
        except UnimplementedError as error:
            return self._switch(error).read(info, indexes)

    def write(self, cells: dict[str, Sequence[tuple[int, int]]]) -> None:
        try:
            self.active.write(cells)
        except UnimplementedError as error:
            self._switch(error).write(cells)

    def write_range(self, info: RegisterInfo, start: int, values: npt.NDArray[np.int64]) -> None:
        try:
            self.active.write_range(info, start, values)
        except UnimplementedError as error:
            self._switch(error).write_range(info, start, values)
