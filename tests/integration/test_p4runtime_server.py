"""P4Runtime server on loopback: a real gRPC client (finsy's protos) against SwitchServer.

The switch runs the fake target (a scripted packet function), so these tests pin the
P4Runtime behaviour independently of the executor: arbitration, pipeline config, Write
errors in ``grpc-status-details-bin``, Read wildcards, packet I/O over UDP ports.
"""

from __future__ import annotations

import socket

import grpc
import pytest
from finsy.proto import p4r, rpc_code, rpc_status

from innet.switch.p4rt_codec.status import STATUS_DETAILS_KEY, decode_write_errors
from innet.switch.p4runtime.errors import NO_PIPELINE_MESSAGE
from innet.switch.ports import UdpPortSpec
from innet.switch.server import SwitchOptions, SwitchServer

from testkit.fake_target import FakeTarget, sample_p4info
from testkit.p4rt_loopback import Client, arbitration, insert, lpm_entry

LPM, FORWARD = 0x02000001, 0x01000001
CPU = 255
Set = p4r.SetForwardingPipelineConfigRequest


def route(pipeline, port: int, data: bytes):
    """Packet function of the tests: b'cpu...' goes to the CPU port, else to port data[0]."""
    if port == CPU:
        return [(int.from_bytes(data[:2], "big") >> 7, data[2:])]
    if data.startswith(b"cpu"):
        return [(CPU, ((port << 7).to_bytes(2, "big")) + data)]
    return [(data[0], data)]


@pytest.fixture
def switch():
    options = SwitchOptions(
        device_id=1, grpc_address="127.0.0.1:0", cpu_port=CPU,
        udp_ports=(UdpPortSpec.parse("1@127.0.0.1:0"), UdpPortSpec.parse("2@127.0.0.1:0")))
    with SwitchServer(options, FakeTarget(route)) as server:
        yield server


@pytest.fixture
def client(switch):
    c = Client(switch.grpc_address)
    yield c
    c.close()


def rpc_error(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


# -- arbitration ---------------------------------------------------------------------------


def test_primary_backup_and_takeover(client: Client):
    a = client.stream(5)
    assert arbitration(a) == (rpc_code.OK, 5)
    b = client.stream(3)
    assert arbitration(b) == (rpc_code.ALREADY_EXISTS, 5)
    c = client.stream(9)
    assert arbitration(c) == (rpc_code.OK, 9)
    assert arbitration(a) == (rpc_code.ALREADY_EXISTS, 9)
    assert arbitration(b) == (rpc_code.ALREADY_EXISTS, 9)
    c.close()
    assert arbitration(a) == (rpc_code.NOT_FOUND, 9)
    assert arbitration(b) == (rpc_code.NOT_FOUND, 9)


def test_duplicate_election_id_ends_stream_with_invalid_argument(client: Client):
    a = client.stream(5)
    arbitration(a)
    b = client.stream(5)
    error = b.next()
    assert isinstance(error, grpc.RpcError)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "election id 5 is already used" in error.details()


def test_wrong_device_id_ends_stream_with_not_found(client: Client):
    s = client.stream()
    s.arbitrate(1, device_id=99)
    error = s.next()
    assert isinstance(error, grpc.RpcError) and error.code() == grpc.StatusCode.NOT_FOUND


def test_write_and_set_from_backup_are_permission_denied(client: Client):
    arbitration(client.stream(5))
    arbitration(client.stream(3))
    error = rpc_error(lambda: client.set_pipeline(election_id=3))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    client.set_pipeline(election_id=5)
    error = rpc_error(lambda: client.write(insert(lpm_entry()), election_id=3))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "not primary" in error.details()
    client.write(insert(lpm_entry()), election_id=5)


# -- pipeline config -----------------------------------------------------------------------


def test_no_pipeline_is_failed_precondition(client: Client):
    arbitration(client.stream(1))
    for call in (lambda: client.write(insert(lpm_entry())),
                 lambda: client.read(p4r.Entity(table_entry=p4r.TableEntry())),
                 lambda: client.stub.GetForwardingPipelineConfig(
                     p4r.GetForwardingPipelineConfigRequest(device_id=1))):
        error = rpc_error(call)
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert error.details() == NO_PIPELINE_MESSAGE


def test_capabilities_and_get_config_response_types(client: Client):
    assert client.stub.Capabilities(p4r.CapabilitiesRequest()).p4runtime_api_version == "1.5.0"
    arbitration(client.stream(1))
    client.set_pipeline(cookie=42)
    Get = p4r.GetForwardingPipelineConfigRequest
    reply = client.stub.GetForwardingPipelineConfig(Get(device_id=1, response_type=Get.COOKIE_ONLY))
    assert reply.config.cookie.cookie == 42 and not reply.config.HasField("p4info")
    reply = client.stub.GetForwardingPipelineConfig(Get(device_id=1, response_type=Get.P4INFO_AND_COOKIE))
    assert reply.config.p4info == sample_p4info() and not reply.config.p4_device_config
    reply = client.stub.GetForwardingPipelineConfig(Get(device_id=1, response_type=Get.ALL))
    assert reply.config.p4_device_config == b"prog"


def test_bad_device_config_and_action(client: Client):
    arbitration(client.stream(1))
    error = rpc_error(lambda: client.set_pipeline(device_config=b"bad"))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "device config rejected" in error.details()
    error = rpc_error(lambda: client.set_pipeline(action=Set.UNSPECIFIED))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    error = rpc_error(lambda: client.set_pipeline(action=Set.COMMIT))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    client.set_pipeline(action=Set.VERIFY_AND_SAVE)
    client.set_pipeline(action=Set.COMMIT)


# -- write / read --------------------------------------------------------------------------


def test_write_errors_per_update_in_status_details(client: Client):
    arbitration(client.stream(1))
    client.set_pipeline()
    bad = lpm_entry(port=0x300)  # 9-bit port parameter
    missing = lpm_entry(dst=0x0B000000)
    error = rpc_error(lambda: client.write(insert(lpm_entry()), insert(lpm_entry()), insert(bad),
                                           insert(missing, p4r.Update.DELETE)))
    assert error.code() == grpc.StatusCode.UNKNOWN
    trailer = dict(error.trailing_metadata())[STATUS_DETAILS_KEY]
    status = rpc_status.Status.FromString(trailer)
    assert status.code == rpc_code.UNKNOWN
    codes = [e.canonical_code for e in decode_write_errors(status)]
    assert codes == [rpc_code.OK, rpc_code.ALREADY_EXISTS, rpc_code.INVALID_ARGUMENT, rpc_code.NOT_FOUND]
    messages = [e.message for e in decode_write_errors(status)]
    assert "does not fit in 9 bits" in messages[2]


def test_write_to_wrong_device_is_not_found(client: Client):
    error = rpc_error(lambda: client.write(insert(lpm_entry()), device_id=7))
    assert error.code() == grpc.StatusCode.NOT_FOUND


def test_wildcard_read_is_canonical_and_streams_many_entities(client: Client):
    arbitration(client.stream(1))
    client.set_pipeline()
    client.write(insert(lpm_entry(port=2)))
    (entity,) = client.read(p4r.Entity(table_entry=p4r.TableEntry()))
    assert entity.table_entry.action.action.params[0].value == b"\x02"
    registers = client.read(p4r.Entity(register_entry=p4r.RegisterEntry()))
    assert len(registers) == 16
    counters = client.read(p4r.Entity(counter_entry=p4r.CounterEntry()))
    assert len(counters) == 8 and all(c.counter_entry.HasField("index") for c in counters)


def test_malformed_read_is_an_error_reply_and_server_lives(client: Client):
    error = rpc_error(lambda: client.read(p4r.Entity()))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    arbitration(client.stream(1))
    client.set_pipeline()
    error = rpc_error(lambda: client.read(p4r.Entity()))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    error = rpc_error(lambda: client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=123))))
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert client.stub.Capabilities(p4r.CapabilitiesRequest()).p4runtime_api_version


# -- packets -------------------------------------------------------------------------------


def udp_peer(switch: SwitchServer, number: int) -> tuple[socket.socket, tuple[str, int]]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(5)
    return sock, switch.ports.ports[number].address  # type: ignore[union-attr,attr-defined]


def test_udp_forwarding_packet_in_and_packet_out(switch: SwitchServer, client: Client):
    s = client.stream(1)
    arbitration(s)
    client.set_pipeline()
    host1, port1 = udp_peer(switch, 1)
    host2, port2 = udp_peer(switch, 2)
    host2.sendto(b"\x02hello", port2)  # teaches port 2 its peer, and comes back out of port 2
    assert host2.recvfrom(100)[0] == b"\x02hello"
    host1.sendto(b"\x02to-two", port1)
    assert host2.recvfrom(100)[0] == b"\x02to-two"
    host1.sendto(b"cpu-bound", port1)
    msg = s.next()
    assert msg.WhichOneof("update") == "packet"
    assert msg.packet.payload == b"cpu-bound"
    assert msg.packet.metadata[0].value == b"\x01"
    out = p4r.PacketOut(payload=b"from-controller")
    out.metadata.add(metadata_id=1, value=b"\x00\x02")
    s.send(p4r.StreamMessageRequest(packet=out))
    assert host2.recvfrom(100)[0] == b"from-controller"
    host1.close()
    host2.close()


def test_packet_out_from_backup_is_stream_error(client: Client):
    arbitration(client.stream(5))
    b = client.stream(3)
    arbitration(b)
    b.send(p4r.StreamMessageRequest(packet=p4r.PacketOut(payload=b"x")))
    msg = b.next()
    assert msg.WhichOneof("update") == "error"
    assert msg.error.canonical_code == rpc_code.PERMISSION_DENIED
    assert msg.error.packet_out.packet_out.payload == b"x"


def test_packets_are_dropped_without_pipeline(switch: SwitchServer):
    host1, port1 = udp_peer(switch, 1)
    host1.sendto(b"\x01x", port1)
    host1.settimeout(0.3)
    with pytest.raises(socket.timeout):
        host1.recvfrom(100)
    host1.close()


def test_failing_packet_out_is_a_stream_error_and_the_stream_lives(caplog):
    """A PacketOut whose output cannot be sent (the port layer fails) comes back as a
    StreamError with the packet, logged at WARNING; the stream keeps working."""
    from concurrent import futures

    from innet.switch.p4runtime.device import Device
    from innet.switch.p4runtime.service import P4RuntimeService, add_to_server

    def broken_ports(outputs):
        raise OSError("port 2 is gone")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    add_to_server(P4RuntimeService(Device(1, FakeTarget(route), CPU), broken_ports), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    c = Client(f"127.0.0.1:{port}")
    try:
        s = c.stream(1)
        assert arbitration(s)[0] == rpc_code.OK
        c.set_pipeline()
        out = p4r.PacketOut(payload=b"boom")
        out.metadata.add(metadata_id=1, value=b"\x00\x02")
        with caplog.at_level("WARNING", logger="innet.switch.p4runtime.service"):
            s.send(p4r.StreamMessageRequest(packet=out))
            msg = s.next()
        assert msg.WhichOneof("update") == "error"
        assert msg.error.canonical_code == rpc_code.INTERNAL
        assert msg.error.message == "PacketOut: OSError: port 2 is gone"
        assert msg.error.packet_out.packet_out.payload == b"boom"
        assert any("PacketOut failed" in r.getMessage() for r in caplog.records)
        s.send(p4r.StreamMessageRequest(packet=p4r.PacketOut(payload=b"again")))
        assert s.next().error.packet_out.packet_out.payload == b"again"  # still served
    finally:
        c.close()
        server.stop(None)
