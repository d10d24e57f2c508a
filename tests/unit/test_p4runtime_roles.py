"""P4Runtime roles (spec 1.3+, "Client Arbitration and Controller Replication"): one
primary per (device, role name), the default role ``""``, Write/Set from a role's
primary, an unknown role NOT_FOUND; role.config is opaque (full access). Through the
controller's client, so both ends of the wire are covered."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from finsy.proto import U128, p4r

from innet.controller.client import P4RuntimeClient
from innet.controller.entities import TableEntry
from innet.controller.errors import NotPrimaryError, RpcError
from innet.controller.pipeline import PipelineConfig
from innet.controller.switch import Switch, SwitchEndpoint
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.server import SwitchOptions, SwitchServer

PIO = Path(__file__).parents[1] / "integration" / "clients" / "innet_pio.p4"


@pytest.fixture(scope="module")
def config() -> PipelineConfig:
    return PipelineConfig.from_p4(PIO)


@pytest.fixture
def server():
    with SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), InnetTarget()) as s:
        yield s


def test_each_role_has_its_own_primary(server, config) -> None:
    with Switch(SwitchEndpoint("d", server.grpc_address, election_id=5)) as default, \
            Switch(SwitchEndpoint("r", server.grpc_address, election_id=5, p4runtime_role="rail")) as rail, \
            Switch(SwitchEndpoint("r2", server.grpc_address, election_id=3, p4runtime_role="rail")) as backup:
        assert default.is_primary and rail.is_primary and not backup.is_primary  # same id, other role
        rail.push(config)                                  # a role's primary may set the pipeline
        rail.insert([TableEntry("dmac", {"dstAddr": 1}, "drop")])
        assert len(default.read_table("dmac")) == 1        # one device state for every role
        with pytest.raises(NotPrimaryError, match=r"not primary \(election id 3, role 'rail'\)"):
            backup.insert([TableEntry("dmac", {"dstAddr": 2}, "drop")])


def test_unknown_role_is_not_found(server, config) -> None:
    with Switch(SwitchEndpoint("d", server.grpc_address, election_id=1)) as sw:
        sw.push(config)
    client = P4RuntimeClient(server.grpc_address, election_id=None, timeout=5).connect()
    try:
        request = p4r.WriteRequest(device_id=1, role="nobody", election_id=U128.encode(1))
        with pytest.raises(grpc.RpcError) as info:
            client.stub.Write(request, timeout=5)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        assert "Write: no role 'nobody' on device 1" in (info.value.details() or "")
    finally:
        client.close()


def test_role_name_and_opaque_config_are_echoed(server) -> None:
    client = P4RuntimeClient(server.grpc_address, election_id=7, timeout=5, role="spine").connect()
    try:
        assert client.is_primary
        stream = client._stream
        assert stream is not None
        update = p4r.MasterArbitrationUpdate(device_id=1, election_id=U128.encode(7))
        update.role.name = "spine"
        update.role.config.type_url = "type.googleapis.com/example.RoleConfig"
        update.role.config.value = b"\x08\x01"
        stream.send(p4r.StreamMessageRequest(arbitration=update))
        reply = client.next_message(5.0, "arbitration")
        assert reply is not None
        assert reply.arbitration.role.name == "spine"
        assert reply.arbitration.role.config.value == b"\x08\x01"
        assert reply.arbitration.status.code == 0
    finally:
        client.close()


def test_role_change_on_a_live_stream_ends_it(server) -> None:
    client = P4RuntimeClient(server.grpc_address, election_id=7, timeout=5, role="spine").connect()
    try:
        stream = client._stream
        assert stream is not None
        update = p4r.MasterArbitrationUpdate(device_id=1, election_id=U128.encode(7))
        update.role.name = "other"
        stream.send(p4r.StreamMessageRequest(arbitration=update))
        with pytest.raises(RpcError, match="role changed from 'spine' to 'other'"):
            client.next_message(5.0, "arbitration")
    finally:
        client.close()
