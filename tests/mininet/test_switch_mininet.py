"""innet-switch as the switch node of a Mininet network, programmed over P4Runtime.

h1 -- s1 -- h2 (SingleSwitchTopo(2)); s1 is ``testbed.mininet_switch.InnetSwitchNode``, i.e.
``innet-switch --no-p4 -i 1@s1-eth1 -i 2@s1-eth2`` in the root namespace. The test pushes
``p4/examples/basic_forward.p4`` (compiled by innet-p4c) and two /32 routes over
P4Runtime, then pings and sends UDP between the hosts: the packets cross the Python
executor (LPM lookup, MAC rewrite, TTL decrement, IPv4 checksum update).
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from pathlib import Path

from finsy.proto import p4r
from mininet.topo import SingleSwitchTopo

from innet.controller.client import P4RuntimeClient
from innet.controller.entities import Lpm, TableEntry, insert
from innet.controller.schema import P4Schema
from innet.switch.p4info import parse_p4info
from innet.testbed.backends.mininet.switch import STATE_DIR, cleanup_leftovers, innet_network, state_lock

RECEIVER = """
import json, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 5001)); s.settimeout(10)
print("ready", flush=True)
got = []
try:
    while len(got) < 3:
        data, sender = s.recvfrom(2048)
        got.append([data.decode(), sender[0]])
except socket.timeout:
    pass
print(json.dumps(got), flush=True)
"""


def _assert_nothing_left() -> None:
    """No pid file and no s1-eth* link (checked under the lock: other test runs' links are not ours)."""
    with state_lock():
        assert not (STATE_DIR / "s1.pid").exists()
        assert "s1-eth" not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout


def _route(schema: P4Schema, host, port: int) -> p4r.Update:
    return insert(schema, TableEntry("MyIngress.ipv4_lpm",
                                     {"hdr.ipv4.dstAddr": Lpm(int(ipaddress.IPv4Address(host.IP())), 32)},
                                     "MyIngress.ipv4_forward",
                                     {"dstAddr": int(host.MAC().replace(":", ""), 16), "port": port}))


def test_ping_and_udp_through_innet_switch(basic_forward: tuple[Path, Path]):
    p4info = parse_p4info(basic_forward[0].read_bytes())
    schema = P4Schema(p4info)
    with innet_network(SingleSwitchTopo(2)) as net:
        h1, h2, s1 = net.get("h1", "h2", "s1")
        assert s1.data_ports() == {1: "s1-eth1", 2: "s1-eth2"}
        assert s1.connected()
        net.staticArp()
        with P4RuntimeClient(s1.grpc_address) as client:
            client.set_pipeline(p4info, basic_forward[1].read_bytes())
            # no routes yet: basic_forward's default action drops
            assert " 0 received" in h1.cmd("ping -c 1 -W 1 10.0.0.2")
            client.write([_route(schema, h1, 1), _route(schema, h2, 2)])
            table = schema.table("MyIngress.ipv4_lpm").id
            assert len(client.read([p4r.Entity(table_entry=p4r.TableEntry(table_id=table))])) == 2

            ping = h1.cmd("ping -c 3 -i 0.2 -W 3 10.0.0.2")
            assert " 3 received" in ping, ping
            assert "ttl=63" in ping, ping  # h2's reply crossed the switch once: TTL 64 -> 63

            receiver = h2.popen([sys.executable, "-c", RECEIVER, h2.IP()], stdout=subprocess.PIPE,
                                text=True)
            try:
                assert receiver.stdout.readline().strip() == "ready"
                for i in range(3):
                    h1.cmd(f"{sys.executable} -c \"import socket; socket.socket(socket.AF_INET, "
                           f"socket.SOCK_DGRAM).sendto(b'datagram-{i}', ('10.0.0.2', 5001))\"")
                got = json.loads(receiver.stdout.readline())
            finally:
                receiver.kill()
                receiver.wait(timeout=10)
            assert got == [[f"datagram-{i}", "10.0.0.1"] for i in range(3)]
    _assert_nothing_left()


def test_leftovers_of_a_crashed_run_are_removed():
    """A stray s1-eth1 and a still-running recorded innet-switch do not break the next run.

    The strays are made under the Mininet lock, so a concurrent Mininet run (another
    test session) is never disturbed; the next run to take the lock removes them."""
    stray = subprocess.Popen([sys.executable, "-m", "innet.switch.cli.switch", "--no-p4",
                              "--grpc-server-addr", "127.0.0.1:0", "--log-level", "warning"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert stray.stdout is not None and "listening on" in stray.stdout.readline()
        with state_lock():
            subprocess.run(["ip", "link", "add", "s1-eth1", "type", "veth", "peer", "name", "innet-strayp"],
                           check=True, timeout=10)
            (STATE_DIR / "s1.pid").write_text(f"{stray.pid}\n")
        with innet_network(SingleSwitchTopo(2)) as net:
            assert stray.wait(timeout=30) is not None  # ended by the cleanup before the build
            assert net.get("s1").connected()
            assert " 0 received" in net.get("h1").cmd("ping -c 1 -W 1 10.0.0.2")  # no pipeline yet
    finally:
        if stray.poll() is None:
            stray.kill()
        stray.wait(timeout=10)
        subprocess.run(["ip", "link", "del", "innet-strayp"], capture_output=True, timeout=10)
    with state_lock():
        assert cleanup_leftovers(["s1"]) == []


def test_failure_inside_the_network_still_cleans_up():
    pid = None
    try:
        with innet_network(SingleSwitchTopo(2)) as net:
            switch = net.get("s1")
            pid = switch.process.pid
            raise RuntimeError("test body failed")
    except RuntimeError as error:
        assert str(error) == "test body failed"
    assert pid is not None and not Path(f"/proc/{pid}").exists()  # reaped by InnetSwitchNode.stop
    _assert_nothing_left()
