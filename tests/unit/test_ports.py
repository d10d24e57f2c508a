"""Port specs, UDP ports (peer convention, lossy mode), pcap files and the receive loop."""

import socket
import struct
import time
from pathlib import Path

import pytest

from innet.switch.ports import (
    IfacePortSpec, LossSpec, PcapWriter, PortError, PortSet, UdpPort, UdpPortSpec,
)


def wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("timed out")


def test_udp_spec_parse():
    assert UdpPortSpec.parse("1@127.0.0.1:40001") == UdpPortSpec(1, ("127.0.0.1", 40001), None)
    assert UdpPortSpec.parse("2@127.0.0.1:0@127.0.0.1:9") == UdpPortSpec(2, ("127.0.0.1", 0), ("127.0.0.1", 9))
    assert UdpPortSpec.parse("3@::1:5").local == ("::1", 5)


@pytest.mark.parametrize("text, message", [
    ("1", "expected PORT@HOST:UDPPORT"),
    ("x@127.0.0.1:1", "switch port 'x' is not a number"),
    ("511@127.0.0.1:1", "outside 0..510"),
    ("1@127.0.0.1:70000", "outside 0..65535"),
    ("1@:5", "expected HOST:UDPPORT"),
])
def test_udp_spec_errors(text, message):
    with pytest.raises(PortError, match=message):
        UdpPortSpec.parse(text)


def test_iface_spec():
    assert IfacePortSpec.parse("4@veth0") == IfacePortSpec(4, "veth0")
    with pytest.raises(PortError, match="expected PORT@IFACE"):
        IfacePortSpec.parse("4")


def udp_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(5)
    return s


def test_udp_port_replies_to_last_sender_or_fixed_peer():
    port = UdpPort(UdpPortSpec.parse("1@127.0.0.1:0"))
    a, b = udp_socket(), udp_socket()
    port.send(b"nobody yet")  # dropped: no peer
    a.sendto(b"hi", port.address)
    wait_for(lambda: port.receive() == b"hi")
    port.send(b"back")
    assert a.recvfrom(100)[0] == b"back"
    fixed = UdpPort(UdpPortSpec(2, ("127.0.0.1", 0), b.getsockname()))
    a.sendto(b"x", fixed.address)
    wait_for(lambda: fixed.receive() == b"x")
    fixed.send(b"to-b")
    assert b.recvfrom(100)[0] == b"to-b"
    for s in (port, fixed, a, b):
        s.close()


def test_udp_bind_conflict_names_port():
    first = UdpPort(UdpPortSpec.parse("1@127.0.0.1:0"))
    host, number = first.address
    with pytest.raises(PortError, match=f"port 2: cannot bind UDP 127.0.0.1:{number}"):
        UdpPort(UdpPortSpec(2, (host, number)))
    first.close()


def impaired(loss: LossSpec, n: int = 200) -> list[int]:
    port = UdpPort(UdpPortSpec(1, ("127.0.0.1", 0), ("127.0.0.1", 9)), loss)
    out = []
    for i in range(n):
        out.extend(int.from_bytes(f, "big") for f in port._impair(i.to_bytes(2, "big")))
    port.close()
    return out


def test_lossy_mode_is_seeded_and_does_what_it_says():
    assert impaired(LossSpec()) == list(range(200))
    dropped = impaired(LossSpec(drop=0.3, seed=1))
    assert dropped == impaired(LossSpec(drop=0.3, seed=1))
    assert 100 < len(dropped) < 180 and dropped == sorted(dropped)
    dup = impaired(LossSpec(duplicate=0.3, seed=2))
    assert len(dup) > 220 and sorted(set(dup)) == list(range(200))
    reordered = impaired(LossSpec(reorder=0.3, seed=3))
    assert reordered != list(range(200))
    assert len(set(reordered)) == len(reordered) >= 199  # no loss; at most one frame still held
    assert set(reordered) <= set(range(200))


def test_pcap_writer_format(tmp_path: Path):
    path = tmp_path / "x.pcap"
    w = PcapWriter(path)
    w.write(b"\x01\x02\x03")
    w.close()
    data = path.read_bytes()
    magic, major, minor, _, _, snaplen, linktype = struct.unpack("<IHHiIII", data[:24])
    assert (magic, major, minor, linktype) == (0xA1B2C3D4, 2, 4, 1)
    _, _, caplen, length = struct.unpack("<IIII", data[24:40])
    assert caplen == length == 3 and data[40:] == b"\x01\x02\x03"


def test_port_set_loop_feeds_handler_and_sends_outputs(tmp_path: Path):
    p1 = UdpPort(UdpPortSpec.parse("1@127.0.0.1:0"))
    p2 = UdpPort(UdpPortSpec.parse("2@127.0.0.1:0"))
    seen = []

    def handler(port: int, frame: bytes):
        seen.append((port, frame))
        if frame == b"boom":
            raise RuntimeError("bad packet")
        return [(2, frame.upper()), (9, b"nowhere")]

    ports = PortSet([p1, p2], handler, tmp_path)
    ports.start()
    h1, h2 = udp_socket(), udp_socket()
    h2.sendto(b"hello", p2.address)  # port 2 learns its peer; output goes to port 2
    assert h2.recvfrom(100)[0] == b"HELLO"
    h1.sendto(b"boom", p1.address)  # handler failure does not stop the loop
    h1.sendto(b"again", p1.address)
    assert h2.recvfrom(100)[0] == b"AGAIN"
    ports.close()
    assert seen == [(2, b"hello"), (1, b"boom"), (1, b"again")]
    assert (tmp_path / "port1_in.pcap").stat().st_size == 24 + 2 * 16 + 4 + 5
    assert (tmp_path / "port2_out.pcap").stat().st_size == 24 + 2 * 16 + 5 + 5
    h1.close()
    h2.close()


def test_port_set_drains_bursts_in_order_on_every_port():
    """Frames queued before the loop starts are all processed, in order, per port."""
    seen: list[tuple[int, bytes]] = []
    a = UdpPort(UdpPortSpec.parse("1@127.0.0.1:0"))
    b = UdpPort(UdpPortSpec.parse("2@127.0.0.1:0"))
    ports = PortSet([a, b], lambda port, frame: seen.append((port, frame)) or [])
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for i in range(150):  # more than one RECEIVE_BURST on each port
            sender.sendto(b"a%03d" % i, a.address)
            sender.sendto(b"b%03d" % i, b.address)
        ports.start()
        wait_for(lambda: len(seen) == 300)
        assert [f for p, f in seen if p == 1] == [b"a%03d" % i for i in range(150)]
        assert [f for p, f in seen if p == 2] == [b"b%03d" % i for i in range(150)]
    finally:
        ports.close()
        sender.close()
