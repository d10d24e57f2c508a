"""Root tier: innet-switch's C port loop on an AF_PACKET port (a veth pair this test makes).

agg64 contributions sent from inside a namespace over the veth come back exactly as the
reference (python) executor computes them, and the namespace and veth are gone afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from innet.switch.native.portio import NativePortSet
from innet.switch.native.select import load_pipeline_file
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.ports import IfacePortSpec
from innet.switch.server import SwitchOptions, SwitchServer
from innet.testbed.microbench.veth import veth_pair

from testkit.agg64 import AGG64, agg64_frames

SENDER = r"""
import json, socket, sys
iface, window = sys.argv[1], int(sys.argv[2])
frames = [bytes.fromhex(h) for h in json.load(sys.stdin)]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((iface, 0))
s.settimeout(5)
replies, sent = [], 0
while len(replies) < len(frames):
    while sent < len(frames) and sent - len(replies) < window:
        s.send(frames[sent]); sent += 1
    data, addr = s.recvfrom(65536)
    if addr[2] != 4 and len(data) > 300 and data[12:14] == b"\x08\x00":  # not our own output
        replies.append(data.hex())
print(json.dumps(replies))
"""


def test_c_loop_on_a_veth_matches_the_reference_executor() -> None:
    frames = agg64_frames(300, seed=4)
    reference = load_pipeline_file(AGG64, "python")
    expected = [reference.process(1, f)[0][1].hex() for f in frames]
    with veth_pair(1500) as pair:
        options = SwitchOptions(grpc_address="127.0.0.1:0", program=AGG64, port_loop="native",
                                iface_ports=(IfacePortSpec(1, pair.outer),))
        with SwitchServer(options, InnetTarget(executor="native")) as server:
            assert isinstance(server.ports, NativePortSet) and server.ports.native
            assert server.ports.rings == {1}  # received through the PACKET_MMAP ring
            done = subprocess.run(["ip", "netns", "exec", pair.ns, sys.executable, "-c", SENDER, pair.inner, "16"],
                                  input=json.dumps([f.hex() for f in frames]), capture_output=True, text=True,
                                  timeout=60)
            assert done.returncode == 0, done.stderr[-2000:]
            assert json.loads(done.stdout) == expected
            rx, tx = server.ports.stats().ports[1]
            assert rx >= len(frames) and tx == len(frames)
            stats = Path("/sys/class/net") / pair.outer / "statistics"  # what ifstats reads
            assert int((stats / "tx_packets").read_text()) == len(frames)
            assert int((stats / "rx_packets").read_text()) == rx
        ns = pair.ns
    assert ns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert pair.outer not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout


REFLECT_P4 = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct headers { ethernet_t ethernet; }
struct metadata { }
parser P(packet_in p, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start { p.extract(h.ethernet); transition accept; }
}
control V(inout headers h, inout metadata m) { apply { } }
control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = sm.ingress_port; h.ethernet.etherType = 0x88b6; }
}
control E(inout headers h, inout metadata m, inout standard_metadata_t sm) { apply { } }
control C(inout headers h, inout metadata m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.ethernet); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

JUMBO_SENDER = r"""
import socket, sys
iface, size = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((iface, 0))
s.settimeout(5)
frame = bytes(6) + bytes.fromhex("020000000001") + b"\x88\xb5" + bytes(range(256)) * (size // 256)
s.send(frame)
while True:
    data, addr = s.recvfrom(65536)
    if addr[2] != 4 and data[12:14] == b"\x88\xb6":
        print(len(data), data[14:] == frame[14:])
        break
"""


def test_jumbo_frames_after_the_mtu_is_raised_at_run_time(tmp_path: Path) -> None:
    """Testbeds raise the switch interfaces' MTU after innet-switch started (Mininet
    links): the receive ring must already fit 9000-byte frames."""
    program = tmp_path / "reflect.p4"
    program.write_text(REFLECT_P4)
    with veth_pair(1500) as pair:
        options = SwitchOptions(grpc_address="127.0.0.1:0", program=program, port_loop="native",
                                iface_ports=(IfacePortSpec(1, pair.outer),))
        with SwitchServer(options, InnetTarget(executor="native")) as server:
            assert isinstance(server.ports, NativePortSet) and server.ports.rings == {1}
            subprocess.run(["ip", "link", "set", pair.outer, "mtu", "9000"], check=True, timeout=30)
            subprocess.run(["ip", "-n", pair.ns, "link", "set", pair.inner, "mtu", "9000"], check=True, timeout=30)
            done = subprocess.run(["ip", "netns", "exec", pair.ns, sys.executable, "-c", JUMBO_SENDER, pair.inner,
                                   "8960"], capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr[-2000:]
            assert done.stdout.split() == [str(14 + 8960), "True"]
            assert server.ports.stats().values["drop_truncated"] == 0


def test_link_down_and_up_neither_spins_nor_stops_the_loop(tmp_path: Path) -> None:
    """Rail failure tests take switch links down: the loop must idle meanwhile (a socket
    error epoll keeps reporting would spin it) and serve the port again once it is up."""
    import time

    program = tmp_path / "reflect.p4"
    program.write_text(REFLECT_P4)
    with veth_pair(1500) as pair:
        options = SwitchOptions(grpc_address="127.0.0.1:0", program=program, port_loop="native",
                                iface_ports=(IfacePortSpec(1, pair.outer),))
        with SwitchServer(options, InnetTarget(executor="native")) as server:
            ports = server.ports
            assert isinstance(ports, NativePortSet)
            subprocess.run(["ip", "link", "set", pair.outer, "down"], check=True, timeout=30)
            before = ports.stats().values["wakeups"]
            time.sleep(0.5)  # measuring an idle rate: the interval is the measurement, not a wait
            assert ports.stats().values["wakeups"] - before < 50  # idle: one epoll timeout per 50 ms
            subprocess.run(["ip", "link", "set", pair.outer, "up"], check=True, timeout=30)
            done = subprocess.run(["ip", "netns", "exec", pair.ns, sys.executable, "-c", JUMBO_SENDER, pair.inner,
                                   "256"], capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr[-2000:]
            assert done.stdout.split() == [str(14 + 256), "True"]
