"""Which transport carries register reads and writes, decided before the first one.

BMv2's P4Runtime server answers UNIMPLEMENTED to every RegisterEntry. Learning that from a
write is too late: BMv2 rejects each update of a batch separately, and the per-update
details of a large batch (a job's 1056 register cells) overflow gRPC's 16 KiB metadata
limit, so the client sees RESOURCE_EXHAUSTED instead of UNIMPLEMENTED. So:

* ``registers="thrift"`` (a switch known to be BMv2, e.g. the ``bmv2`` backend): registers
  go through ``simple_switch_CLI`` only; no RegisterEntry is ever sent;
* ``registers="p4runtime"``: RegisterEntry only (innet's target);
* ``registers="auto"`` with a Thrift port: one single-cell RegisterEntry read before the
  first register operation decides (UNIMPLEMENTED: Thrift from then on);
  without a Thrift port: P4Runtime, with the hint to give one on UNIMPLEMENTED.
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
import numpy.typing as npt

from innet.controller.client import P4RuntimeClient
from innet.controller.errors import ControllerError, UnimplementedError
from innet.controller.registers import (AutoRegisters, P4RuntimeRegisters, RegisterBackend, Runner,
                                        ThriftCliRegisters)
from innet.controller.schema import P4Schema, RegisterInfo

LOG = logging.getLogger(__name__)

TRANSPORTS = ("auto", "p4runtime", "thrift")


def register_entry_supported(client: P4RuntimeClient, schema: P4Schema) -> bool:
    """One RegisterEntry read of cell 0 of the first register: False on UNIMPLEMENTED (BMv2);
    True when it works or the program has no register."""
    infos = list(schema.registers.by_name.values())
    if not infos:
        return True
    try:
        P4RuntimeRegisters(client, schema).read(infos[0], range(0, 1))
    except UnimplementedError:
        return False
    return True


class ProbingRegisters:
    """``auto`` with a Thrift port: probe once, at the first register operation, then keep."""

    def __init__(self, client: P4RuntimeClient, schema: P4Schema, thrift: ThriftCliRegisters, address: str) -> None:
        self.client, self.schema, self.thrift, self.address = client, schema, thrift, address
        self.active: RegisterBackend | None = None

    def _backend(self) -> RegisterBackend:
        if self.active is None:
            if register_entry_supported(self.client, self.schema):
                self.active = AutoRegisters(P4RuntimeRegisters(self.client, self.schema), self.thrift, self.address)
            else:
                LOG.info("switch %s: RegisterEntry is UNIMPLEMENTED, registers via simple_switch_CLI", self.address)
                self.active = self.thrift
        return self.active

    def read(self, info: RegisterInfo, indexes: range) -> list[int]:
        return self._backend().read(info, indexes)

    def write(self, cells: dict[str, Sequence[tuple[int, int]]]) -> None:
        self._backend().write(cells)

    def write_range(self, info: RegisterInfo, start: int, values: npt.NDArray[np.int64]) -> None:
        self._backend().write_range(info, start, values)


def choose(client: P4RuntimeClient, schema: P4Schema, transport: str, thrift_port: int | None, address: str,
           runner: Runner | None, cli: str = "simple_switch_CLI") -> RegisterBackend:
    """The register backend of a switch session (see the module docstring); ``runner``
    None: one long-lived CLI process (``ThriftCliRegisters``' default)."""
    if transport not in TRANSPORTS:
        raise ControllerError(f"switch {address}: register transport {transport!r}: expected one of "
                              f"{', '.join(TRANSPORTS)}")
    thrift = ThriftCliRegisters(thrift_port, cli=cli, runner=runner) if thrift_port is not None else None
    if transport == "thrift":
        if thrift is None:
            raise ControllerError(f"switch {address}: register transport 'thrift' needs the switch's Thrift port "
                                  "(SwitchEndpoint.thrift_port / --thrift-port)")
        return thrift
    p4rt = P4RuntimeRegisters(client, schema)
    if transport == "p4runtime":
        return p4rt
    if thrift is None:
        return AutoRegisters(p4rt, None, address)
    return ProbingRegisters(client, schema, thrift, address)
