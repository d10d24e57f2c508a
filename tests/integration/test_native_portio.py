"""innet-switch's C port loop (``innet.switch.native.portio``) on loopback UDP ports.

The same frames go through a switch whose ports are served by the C loop and through one
served by the Python ``PortSet`` (native executor on both, and the python executor as the
reference): the replies and the register state must be identical. PacketIn/PacketOut and
digests still reach the control plane; control-plane batches written while traffic flows
are atomic for packets and none is lost; stopping is prompt.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from finsy.proto import p4d, p4r

from innet.switch.native.portio import NativePortSet
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.ports import PortSet, UdpPortSpec
from innet.switch.server import SwitchError, SwitchOptions, SwitchServer

from testkit.agg64 import AGG64, agg64_frames

PIO = Path(__file__).parent / "clients" / "innet_pio.p4"
CPU = 255
DIGEST_P4 = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct headers { ethernet_t ethernet; }
struct learn_t { bit<48> srcAddr; bit<9> port; }
struct metadata { }
parser P(packet_in p, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start { p.extract(h.ethernet); transition accept; }
}
control V(inout headers h, inout metadata m) { apply { } }
control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply {
        digest<learn_t>(1, { h.ethernet.srcAddr, sm.ingress_port });
        sm.egress_spec = sm.ingress_port;
    }
}
control E(inout headers h, inout metadata m, inout standard_metadata_t sm) { apply { } }
control C(inout headers h, inout metadata m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.ethernet); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def start(program: Path, loop: str, executor: str = "native", cpu_port: int | None = None,
          ports: int = 2) -> SwitchServer:
    options = SwitchOptions(grpc_address="127.0.0.1:0", program=program, cpu_port=cpu_port, port_loop=loop,
                            udp_ports=tuple(UdpPortSpec.parse(f"{n}@127.0.0.1:0") for n in range(1, ports + 1)))
    return SwitchServer(options, InnetTarget(executor=executor)).start()


def address(server: SwitchServer, port: int) -> tuple[str, int]:
    assert server.ports is not None
    return server.ports.ports[port].address  # type: ignore[attr-defined,no-any-return]


def host() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(5)
    return s


def ids(server: SwitchServer) -> dict[str, int]:
    info = server.device.get_pipeline(p4r.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE).p4info
    return {o.preamble.name: o.preamble.id
            for group in (info.tables, info.actions, info.registers, info.counters, info.digests) for o in group}


def register(server: SwitchServer, name: str) -> list[int]:
    entities = server.device.read([p4r.Entity(register_entry=p4r.RegisterEntry(register_id=ids(server)[name]))])
    return [int.from_bytes(e.register_entry.data.bitstring, "big") for e in entities]


def windowed(sock: socket.socket, to: tuple[str, int], frames: list[bytes], window: int) -> list[bytes]:
    """Send ``frames`` keeping ``window`` in flight; the replies in arrival order."""
    replies: list[bytes] = []
    sent = 0
    while len(replies) < len(frames):
        while sent < len(frames) and sent - len(replies) < window:
            sock.sendto(frames[sent], to)
            sent += 1
        replies.append(sock.recvfrom(65536)[0])
    return replies


@pytest.mark.parametrize("executor,loop", [("native", "python"), ("python", "python")])
def test_c_loop_aggregates_exactly_like_the_python_loop(executor, loop):
    frames = agg64_frames(400, seed=9)
    runs = {}
    for ex, lp in (("native", "native"), (executor, loop)):
        server = start(AGG64, lp, ex, ports=1)
        try:
            assert isinstance(server.ports, NativePortSet if lp == "native" else PortSet)
            sock = host()
            replies = windowed(sock, address(server, 1), frames, window=16)
            sock.close()
            runs[(ex, lp)] = replies, register(server, "MyIngress.r00"), register(server, "MyIngress.r63")
            if lp == "native":
                stats = server.ports.stats()  # type: ignore[union-attr]
                assert stats.ports[1] == (len(frames), len(frames))
                assert stats.values["to_python"] == 0
        finally:
            server.stop()
    native, other = runs[("native", "native")], runs[(executor, loop)]
    assert native[0] == other[0]
    assert native[1] == other[1] and native[2] == other[2]
    assert any(native[1][:8])  # the contributions did land in the registers


def test_packet_in_and_packet_out_through_the_cpu_port():
    server = start(PIO, "native", cpu_port=CPU)
    got: list[p4r.StreamMessageResponse] = []
    server.device.controller_sink = got.append
    h1, h2 = host(), host()
    try:
        n = ids(server)
        entry = p4r.TableEntry(table_id=n["MyIngress.dmac"])
        entry.match.add(field_id=1).exact.value = (0xCC).to_bytes(6, "big")
        entry.action.action.action_id = n["MyIngress.to_cpu"]
        assert server.device.write([p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=entry))]) == [None]
        frame = (0xCC).to_bytes(6, "big") + bytes(5) + b"\x01\x08\x00to-cpu"
        h1.sendto(frame, address(server, 1))
        deadline = time.monotonic() + 5
        while not got and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [m.packet.payload for m in got] == [frame]
        assert [(m.metadata_id, m.value) for m in got[0].packet.metadata] == [(1, b"\x01"), (2, b"\x00")]
        h2.sendto(bytes(14), address(server, 2))  # dropped by dmac, teaches port 2 its peer
        deadline = time.monotonic() + 5
        while server.ports.peer(2) is None and time.monotonic() < deadline:  # type: ignore[union-attr]
            time.sleep(0.01)
        out = p4r.PacketOut(payload=b"\x00" * 6 + b"\x77" * 6 + b"\x08\x00from-controller")
        out.metadata.add(metadata_id=1, value=b"\x02")
        server.ports.send(server.device.packet_out(out))  # type: ignore[union-attr]
        assert h2.recvfrom(2000)[0] == out.payload
    finally:
        h1.close()
        h2.close()
        server.stop()


def test_digests_of_c_loop_batches_reach_the_controller(tmp_path):
    program = tmp_path / "learn.p4"
    program.write_text(DIGEST_P4)
    server = start(program, "native", ports=1)
    got: list[p4r.StreamMessageResponse] = []
    server.device.controller_sink = got.append
    sock = host()
    try:
        entry = p4r.DigestEntry(digest_id=ids(server)["learn_t"],
                                config=p4r.DigestEntry.Config(max_list_size=1, ack_timeout_ns=10**9))
        assert server.device.write([p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(digest_entry=entry))]) == [None]
        assert server.ports.native  # type: ignore[union-attr]
        macs = [0x0A0000000001 + i for i in range(5)]
        for mac in macs:
            frame = bytes(6) + mac.to_bytes(6, "big") + b"\x08\x00"
            sock.sendto(frame, address(server, 1))
            assert sock.recvfrom(100)[0] == frame
        deadline = time.monotonic() + 5
        while len(got) < len(macs) and time.monotonic() < deadline:
            time.sleep(0.01)
        learned = [int.from_bytes(m.digest.data[0].struct.members[0].bitstring, "big") for m in got]
        assert learned == macs
        assert all(m.digest.data[0].struct.members[1].bitstring == b"\x01" for m in got)
    finally:
        sock.close()
        server.stop()


def _dmac(n: dict[str, int], kind: int, dst: int, port: int) -> p4r.Update:
    entry = p4r.TableEntry(table_id=n["MyIngress.dmac"])
    entry.match.add(field_id=1).exact.value = dst.to_bytes(6, "big")
    if kind != p4r.Update.DELETE:
        entry.action.action.action_id = n["MyIngress.forward"]
        entry.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return p4r.Update(type=kind, entity=p4r.Entity(table_entry=entry))


def test_control_plane_batches_are_atomic_while_traffic_flows():
    """Each batch deletes and re-inserts the only forwarding entry and bumps a register:
    a packet that saw the batch half-way would be dropped (the table's default)."""
    server = start(PIO, "native")
    h1, h2 = host(), host()
    n = ids(server)
    try:
        assert server.device.write([_dmac(n, p4r.Update.INSERT, 0x0A, 2)]) == [None]
        h2.sendto(bytes(14), address(server, 2))  # teaches port 2 its peer
        deadline = time.monotonic() + 5
        while server.ports.peer(2) is None and time.monotonic() < deadline:  # type: ignore[union-attr]
            time.sleep(0.01)
        frame = (0x0A).to_bytes(6, "big") + bytes(6) + b"\x08\x00payload"
        stop, flowing, sent, errors = threading.Event(), threading.Event(), [0], []

        def traffic() -> None:
            h2.settimeout(5)
            while not stop.is_set():
                for _ in range(8):
                    h1.sendto(frame, address(server, 1))
                sent[0] += 8
                for _ in range(8):
                    try:
                        assert h2.recvfrom(100)[0] == frame
                    except (TimeoutError, AssertionError) as error:
                        errors.append(error)
                        return
                flowing.set()

        thread = threading.Thread(target=traffic)
        thread.start()
        assert flowing.wait(10) or errors, "no traffic through the switch before the batches"
        batches = 0
        seen = n["MyIngress.seen"]
        while batches < 300 and thread.is_alive():
            reg = p4r.RegisterEntry(register_id=seen, data=p4d.P4Data(bitstring=(batches + 1).to_bytes(4, "big")))
            reg.index.index = 7
            results = server.device.write([_dmac(n, p4r.Update.DELETE, 0x0A, 2), _dmac(n, p4r.Update.INSERT, 0x0A, 2),
                                           p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(register_entry=reg))])
            assert results == [None, None, None]
            batches += 1
        stop.set()
        thread.join(10)
        assert not errors, f"a packet was lost or changed after {sent[0]} packets: {errors[0]!r}"
        assert batches == 300 and sent[0] > 0
        cells = register(server, "MyIngress.seen")
        assert cells[7] == 300
        assert cells[1] == sent[0]  # every packet of port 1 counted once
    finally:
        h1.close()
        h2.close()
        server.stop()


def test_stop_ends_the_c_loop_promptly_under_traffic():
    server = start(AGG64, "native", ports=1)
    sock = host()
    frames = agg64_frames(32, seed=1)
    try:
        for frame in frames:
            sock.sendto(frame, address(server, 1))
        ports = server.ports
        assert isinstance(ports, NativePortSet)
        threads = list(ports._threads)
        assert threads and all(t.is_alive() for t in threads)
    finally:
        began = time.monotonic()
        server.stop()
        took = time.monotonic() - began
        sock.close()
    assert not any(t.is_alive() for t in threads)
    assert took < 2.0


def test_native_port_loop_with_python_executor_is_refused():
    options = SwitchOptions(grpc_address="127.0.0.1:0", port_loop="native",
                            udp_ports=(UdpPortSpec.parse("1@127.0.0.1:0"),))
    with pytest.raises(SwitchError, match="port loop native: the executor is python"):
        SwitchServer(options, InnetTarget(executor="python")).start()


def test_python_pipeline_behind_the_c_loop_runs_through_the_handler():
    """A program the native executor refused (``auto`` fell back to python): the C loop
    hands every frame to Python and sends what the handler returns."""
    from innet.switch.native.select import load_pipeline_file
    from innet.switch.ports import UdpPort

    pipeline = load_pipeline_file(AGG64, "python")
    reference = load_pipeline_file(AGG64, "python")
    frames = agg64_frames(50, seed=3)
    expected = [reference.process(1, f)[0][1] for f in frames]
    ports = NativePortSet([UdpPort(UdpPortSpec.parse("1@127.0.0.1:0"))], pipeline.process, lambda cpu: None)
    ports.bind(pipeline)
    ports.start()
    sock = host()
    try:
        assert not ports.native
        assert windowed(sock, ports.ports[1].address, frames, window=8) == expected  # type: ignore[attr-defined]
        assert ports.stats().values["to_python"] == len(frames)
    finally:
        sock.close()
        ports.close()


def test_fixed_udp_peer_is_kept():
    h1, h2 = host(), host()
    peer = h2.getsockname()
    options = SwitchOptions(grpc_address="127.0.0.1:0", program=PIO, port_loop="native",
                            udp_ports=(UdpPortSpec.parse("1@127.0.0.1:0"),
                                       UdpPortSpec.parse(f"2@127.0.0.1:0@{peer[0]}:{peer[1]}")))
    server = SwitchServer(options, InnetTarget(executor="native")).start()
    try:
        assert server.device.write([_dmac(ids(server), p4r.Update.INSERT, 0x0A, 2)]) == [None]
        frame = (0x0A).to_bytes(6, "big") + bytes(6) + b"\x08\x00fixed"
        h1.sendto(frame, address(server, 1))
        assert h2.recvfrom(100)[0] == frame
        h1.sendto(bytes(14), address(server, 2))  # another sender on port 2 does not become its peer
        h1.sendto(frame, address(server, 1))
        assert h2.recvfrom(100)[0] == frame
        assert server.ports.peer(2) == peer  # type: ignore[union-attr]
    finally:
        h1.close()
        h2.close()
        server.stop()


def test_udp_peer_is_learned_per_datagram_within_a_batch(tmp_path):
    """Two hosts share port 1 of a switch that sends each frame back out of its ingress port. Their
    frames are read in one batch (the loop is held on the pipeline lock meanwhile); each frame
    must go back to its own sender, as when frames are handled one at a time."""
    program = tmp_path / "reflect.p4"
    program.write_text(DIGEST_P4.replace("digest<learn_t>(1, { h.ethernet.srcAddr, sm.ingress_port });", ""))
    server = start(program, "native", ports=1)
    a, b = host(), host()
    to = address(server, 1)

    def frame(tag: str) -> bytes:
        return bytes(12) + b"\x08\x00" + tag.encode()

    try:
        pipeline = server.device._active.loaded.pipeline.pipeline  # type: ignore[union-attr]
        with pipeline.lock:  # the C loop's batch runs under it
            a.sendto(frame("a0"), to)  # read alone; its batch then waits for the lock
            time.sleep(0.3)
            for tag in ("a1", "b1", "b2", "a2", "b3"):
                (a if tag[0] == "a" else b).sendto(frame(tag), to)
            time.sleep(0.3)  # all queued on the port: the next recvmmsg reads them together
        got_a = sorted(a.recvfrom(100)[0][14:].decode() for _ in range(3))
        got_b = sorted(b.recvfrom(100)[0][14:].decode() for _ in range(3))
        assert (got_a, got_b) == (["a0", "a1", "a2"], ["b1", "b2", "b3"])
        assert server.ports.peer(1) == b.getsockname()  # type: ignore[union-attr]
    finally:
        a.close()
        b.close()
        server.stop()


@pytest.mark.parametrize("extra,message", [
    ({"port_loop": "fast"}, r"port loop 'fast': expected one of auto, native, python"),
    ({"port_loop": "native", "pcap_dir": Path("/nonexistent-pcap")},
     r"port loop native: pcap capture \(--pcap\) is done by the python port loop only"),
    ({"port_loop": "native", "port_delays": ((1, 5.0),)},
     r"port loop native: port delays \(--port-delay\) are done by the python port loop only"),
])
def test_bad_port_loop_choices_are_one_clear_error(extra, message):
    options = SwitchOptions(grpc_address="127.0.0.1:0", udp_ports=(UdpPortSpec.parse("1@127.0.0.1:0"),), **extra)
    with pytest.raises(SwitchError, match=message):
        SwitchServer(options, InnetTarget(executor="native")).start()


def test_auto_keeps_the_python_loop_for_pcap(tmp_path):
    options = SwitchOptions(grpc_address="127.0.0.1:0", udp_ports=(UdpPortSpec.parse("1@127.0.0.1:0"),),
                            pcap_dir=tmp_path)
    with SwitchServer(options, InnetTarget(executor="native")) as server:
        assert isinstance(server.ports, PortSet)


def test_auto_keeps_the_python_loop_for_port_delays():
    """The WAN delay stage (geo on Mininet) wraps ports in Python; the C loop would bypass it."""
    options = SwitchOptions(grpc_address="127.0.0.1:0", udp_ports=(UdpPortSpec.parse("1@127.0.0.1:0"),),
                            port_delays=((1, 5.0),))
    with SwitchServer(options, InnetTarget(executor="native")) as server:
        assert isinstance(server.ports, PortSet)
