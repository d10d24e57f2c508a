"""The register-range wire format, and the controller's fallback to one RegisterEntry per cell
on a switch that does not have it (BMv2's P4Runtime server)."""

from __future__ import annotations

from typing import Any

import grpc
import numpy as np
import pytest
from finsy.proto import p4r

from innet.controller.errors import UpdateFailure, ValueRangeError, WriteError
from innet.controller.registers import P4RuntimeRegisters
from innet.controller.schema import RegisterInfo
from innet.switch.p4rt_codec import register_range as rr


def test_cells_round_trip_big_endian_at_the_register_width() -> None:
    for width, n in ((1, 1), (8, 1), (9, 2), (16, 2), (32, 4), (48, 8), (64, 8)):
        assert rr.cell_bytes(width) == n
    assert rr.pack([1, -1, 256], 16) == b"\x00\x01\xff\xff\x01\x00"
    entity = rr.write_entity(7, 1000, np.array([3, -2], np.int64), 32)
    assert entity.extern_entry.extern_type_id == rr.EXTERN_TYPE_ID and entity.extern_entry.extern_id == 7
    start, count, cells = rr.parse(entity.extern_entry, 32)
    assert (start, count, cells.tolist()) == (1000, 2, [3, 0xFFFFFFFE])
    assert rr.parse(rr.read_entity(7, 5, 9).extern_entry, 32) == (5, 9, None)
    with pytest.raises(rr.RegisterRangeError, match="at most 64 bits, not 65"):
        rr.cell_bytes(65)
    assert rr.runs([4, 5, 6, 9, 10, 3]) == [(0, 3), (3, 2), (5, 1)]


class FakeClient:
    """A P4Runtime client of a switch without the extension: extern entries are UNIMPLEMENTED."""

    address = "127.0.0.1:1"

    def __init__(self) -> None:
        self.cells: dict[int, int] = {}
        self.requests = 0

    def write(self, updates: list[p4r.Update], describe: Any = None) -> None:
        self.requests += 1
        failures = []
        for i, u in enumerate(updates):
            if u.entity.WhichOneof("entity") == "extern_entry":
                failures.append(UpdateFailure(i, grpc.StatusCode.UNIMPLEMENTED, "no extern entries", "extern"))
            else:
                r = u.entity.register_entry
                self.cells[r.index.index] = int.from_bytes(r.data.bitstring, "big")
        if failures:
            raise WriteError(failures, len(updates))


def test_falls_back_to_one_register_entry_per_cell_and_stays_there() -> None:
    info = RegisterInfo(id=0x16000001, name="I.cells", size=64, bitwidth=16)

    class Schema:
        def register(self, name: str) -> RegisterInfo:
            return info

    client = FakeClient()
    regs = P4RuntimeRegisters(client, Schema())  # type: ignore[arg-type]
    regs.write_range(info, 10, np.array([1, 2, -1], np.int64))
    assert not regs.ranges and client.cells == {10: 1, 11: 2, 12: 0xFFFF}
    requests = client.requests
    regs.write_range(info, 20, np.array([4], np.int64))
    assert client.requests == requests + 1 and client.cells[20] == 4  # no second try of the extension
    with pytest.raises(ValueRangeError, match=r"register 'I\.cells': value 65536 does not fit 16 bits"):
        regs.write_range(info, 0, np.array([65536], np.int64))
