"""The controller's client cuts large writes into requests whose per-update errors stay
readable, says that such a write is not atomic, and accepts the large
error trailers a switch like BMv2 sends. Real gRPC server on loopback, fake target."""

from __future__ import annotations

import grpc
import pytest
from finsy.proto import p4r

from innet.controller import client as client_module
from innet.controller.client import MAX_WRITE_UPDATES, P4RuntimeClient
from innet.controller.errors import ControllerError, WriteError
from innet.switch.p4runtime import errors as server_errors
from innet.switch.server import SwitchOptions, SwitchServer

from testkit.fake_target import FakeTarget, sample_p4info

COUNTER = 0x12000001  # MyIngress.port_packets, 8 cells


@pytest.fixture
def client():
    with SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), FakeTarget()) as server:
        with P4RuntimeClient(server.grpc_address, timeout=5) as c:
            c.set_pipeline(sample_p4info(), b"prog")
            yield c


def cell(index: int) -> p4r.Update:
    entry = p4r.CounterEntry(counter_id=COUNTER, data=p4r.CounterData(packet_count=index))
    entry.index.index = index
    return p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(counter_entry=entry))


def test_batch_size_keeps_innet_switch_errors_per_update():
    assert MAX_WRITE_UPDATES <= server_errors.MAX_DETAILED_UPDATES


def test_large_write_reports_every_failure_by_global_index(client: P4RuntimeClient):
    updates = [cell(i % 8) for i in range(1000)]
    updates[700], updates[999] = cell(8), cell(1234)  # outside the 8 cells
    with pytest.raises(WriteError) as info:
        client.write(updates)
    error = info.value
    assert [(f.index, f.code) for f in error.failures] == [(700, grpc.StatusCode.OUT_OF_RANGE),
                                                            (999, grpc.StatusCode.OUT_OF_RANGE)]
    assert "index 1234 is outside 0..7" in error.failures[1].message
    assert error.requests == -(-1000 // MAX_WRITE_UPDATES)
    assert str(error).endswith(f"(sent as {error.requests} Write requests, not atomically: "
                               "the other updates were applied)")


def test_single_request_refuses_a_write_that_needs_several(client: P4RuntimeClient):
    with pytest.raises(ControllerError, match=rf"1000 updates need 8 Write requests \(at most "
                                              rf"{MAX_WRITE_UPDATES} updates.*not atomic"):
        client.write([cell(i % 8) for i in range(1000)], single_request=True)
    client.write([cell(i % 8) for i in range(MAX_WRITE_UPDATES)], single_request=True)


def test_client_accepts_error_trailers_beyond_grpcs_default(client: P4RuntimeClient, monkeypatch):
    # a switch that sends every message in full, as BMv2 does: 300 x ~100 bytes > 16 KiB
    monkeypatch.setattr(server_errors, "STATUS_DETAILS_BUDGET", 1 << 20)
    monkeypatch.setattr(client_module, "MAX_WRITE_UPDATES", 300)
    with pytest.raises(WriteError) as info:
        client.write([cell(100 + i) for i in range(300)])
    assert len(info.value.failures) == 300
    assert all("is outside 0..7" in f.message for f in info.value.failures)
