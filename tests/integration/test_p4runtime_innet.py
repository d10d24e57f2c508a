"""innet-switch (process) with innet's executor, programmed over P4Runtime.

``clients/innet_pio.p4`` is compiled by ``innet-p4c``; the switch starts with ``--no-p4``
and UDP ports, a gRPC client pushes the pipeline, writes a table entry, reads registers
and counters, and exchanges PacketIn/PacketOut; p4runtime-shell does the same flow.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from finsy.proto import U128, p4d, p4r
from google.protobuf import text_format

from innet.switch.p4info import parse_p4info

from testkit.p4rt_loopback import Client, arbitration

HERE = Path(__file__).parent
PROGRAM = HERE / "clients" / "innet_pio.p4"
PREFIX = "innet-switch: P4Runtime listening on "

SHELL_CLIENT = HERE / "clients" / "p4rt_shell_client.py"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("p4c")
    result = subprocess.run([sys.executable, "-m", "innet.switch.cli.p4c", str(PROGRAM), "-o", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return out / "p4info.txtpb", out / "innet_pio.innet.json"


@pytest.fixture
def switch():
    proc = subprocess.Popen([sys.executable, "-m", "innet.switch.cli.switch", "--no-p4",
                             "-u", "1@127.0.0.1:0", "-u", "2@127.0.0.1:0", "--cpu-port", "255",
                             "--grpc-server-addr", "127.0.0.1:0", "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    address = proc.stdout.readline().strip()
    assert address.startswith(PREFIX), address + proc.stderr.read()  # type: ignore[union-attr]
    ports = {}
    for _ in range(2):
        words = proc.stdout.readline().split()  # innet-switch: port N on UDP HOST:PORT
        host, port = words[-1].rsplit(":", 1)
        ports[int(words[2])] = (host, int(port))
    yield address[len(PREFIX):], ports
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


def host() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(5)
    return s


def frame(dst: int, payload: bytes = b"data") -> bytes:
    return dst.to_bytes(6, "big") + bytes.fromhex("000000000001") + b"\x08\x00" + payload


def set_pipeline(client: Client, compiled: tuple[Path, Path]) -> None:
    p4info = parse_p4info(compiled[0].read_bytes())
    config = p4r.ForwardingPipelineConfig(p4info=p4info, p4_device_config=compiled[1].read_bytes())
    config.cookie.cookie = 5
    client.stub.SetForwardingPipelineConfig(p4r.SetForwardingPipelineConfigRequest(
        device_id=1, election_id=U128.encode(1), config=config,
        action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT))


def ids(compiled) -> dict[str, int]:
    info = parse_p4info(compiled[0].read_bytes())
    out = {}
    for group in (info.tables, info.actions, info.registers, info.counters):
        for obj in group:
            out[obj.preamble.name] = obj.preamble.id
    return out


def dmac_entry(ids: dict[str, int], dst: int, action: str, port: int | None = None) -> p4r.Update:
    e = p4r.TableEntry(table_id=ids["MyIngress.dmac"])
    e.match.add(field_id=1).exact.value = dst.to_bytes(6, "big")
    e.action.action.action_id = ids[action]
    if port is not None:
        e.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=e))


def test_pipeline_push_forwarding_registers_and_packet_io(switch, compiled):
    address, ports = switch
    client = Client(address)
    stream = client.stream(1)
    arbitration(stream)
    set_pipeline(client, compiled)
    n = ids(compiled)
    client.write(dmac_entry(n, 0x0A, "MyIngress.forward", 2), dmac_entry(n, 0xCC, "MyIngress.to_cpu"))
    h1, h2 = host(), host()
    h2.sendto(frame(0xFF), ports[2])  # miss: dropped, but teaches port 2 its peer
    h1.sendto(frame(0x0A, b"hello"), ports[1])
    assert h2.recvfrom(2000)[0] == frame(0x0A, b"hello")
    h1.sendto(frame(0xCC, b"to-cpu"), ports[1])
    msg = stream.next()
    assert msg.WhichOneof("update") == "packet"
    assert msg.packet.payload == frame(0xCC, b"to-cpu")
    assert [(m.metadata_id, m.value) for m in msg.packet.metadata] == [(1, b"\x01"), (2, b"\x00")]
    out = p4r.PacketOut(payload=frame(0x77, b"from-controller"))
    out.metadata.add(metadata_id=1, value=b"\x02")
    stream.send(p4r.StreamMessageRequest(packet=out))
    assert h2.recvfrom(2000)[0] == frame(0x77, b"from-controller")
    seen = client.read(p4r.Entity(register_entry=p4r.RegisterEntry(register_id=n["MyIngress.seen"])))
    values = [int.from_bytes(e.register_entry.data.bitstring, "big") for e in seen]
    assert values[1] == 2 and values[2] == 1
    reg = p4r.RegisterEntry(register_id=n["MyIngress.seen"], data=p4d.P4Data(bitstring=b"\x09"))
    reg.index.index = 1
    client.write(p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(register_entry=reg)))
    (cell,) = client.read(p4r.Entity(register_entry=reg))
    assert cell.register_entry.data.bitstring == b"\x09"
    counters = client.read(p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=n["MyIngress.port_packets"])))
    assert counters[1].counter_entry.data.packet_count == 2
    error = None
    try:
        client.write(dmac_entry(n, 0x0A, "MyIngress.forward", 3))
    except grpc.RpcError as e:
        error = e
    assert error is not None and error.code() == grpc.StatusCode.UNKNOWN
    h1.close()
    h2.close()
    client.close()


def test_p4runtime_shell_pushes_innet_p4c_output(switch, compiled, shell_python, tmp_path):
    address, ports = switch
    spec = {"match": {"hdr.ethernet.dstAddr": "00:00:00:00:00:0a"}, "params": {"port": "2"},
            "group": {"id": 1, "replicas": [[1, 1], [2, 1]]},
            "packet_out": {"payload_hex": frame(0x55, b"pkt-out").hex(), "metadata": {"egress_port": "2"}}}
    h2 = host()
    h2.sendto(frame(0xFF), ports[2])
    result = subprocess.run([str(shell_python), str(SHELL_CLIENT), address, "1", str(compiled[0]),
                             str(compiled[1]), "MyIngress.dmac", "MyIngress.forward", json.dumps(spec)],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["entries"] == 1 and "ALREADY_EXISTS" in out["duplicate_insert"]
    assert h2.recvfrom(2000)[0] == frame(0x55, b"pkt-out")
    h1 = host()
    h1.sendto(frame(0x0A, b"via-shell-entry"), ports[1])
    assert h2.recvfrom(2000)[0] == frame(0x0A, b"via-shell-entry")
    h1.close()
    h2.close()
