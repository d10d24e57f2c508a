"""innet.wire: build-to-exact-bytes, round trips, framing, scapy dissection."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest

from innet import wire
from innet.wire import Flag, Message, MsgType


def test_constants_match_protocol_document() -> None:
    assert wire.UDP_PORT == 18766 == 0x494E
    assert wire.HEADER_LEN == 24
    assert sum(wire.HEADER_BITS) == 8 * wire.HEADER_LEN
    assert (MsgType.CONTRIB, MsgType.RESULT, MsgType.STATUS, MsgType.STALE, MsgType.REDUCE,
            MsgType.BCAST) == (1, 2, 3, 4, 5, 6)
    assert (Flag.VER, Flag.RETRANS, Flag.HDRONLY) == (1, 2, 4)
    assert (wire.Mode.SUM, wire.Mode.SGD, wire.Mode.MOMENTUM) == (0, 1, 2)


def test_contrib_exact_bytes() -> None:
    msg = Message(MsgType.CONTRIB, job=0x0102, worker=3, slot=0x0405, chunk=0x06070809,
                  flags=Flag.VER | Flag.RETRANS, epoch=0x0A0B0C0D,
                  values=np.array([1, -1, 0x7FFFFFFF], np.int32))
    data = wire.pack(msg, k=4)
    expected = bytes.fromhex(
        "01" "03" "0102" "0003" "0405" "06070809" "0003" "0000" "00000000" "0a0b0c0d"
        "00000001" "ffffffff" "7fffffff" "00000000")
    assert data == expected
    assert len(data) == wire.message_len(4) == 40


@pytest.mark.parametrize("msg_type", list(MsgType))
def test_round_trip_every_type(msg_type: MsgType) -> None:
    rng = np.random.default_rng(int(msg_type))
    values = rng.integers(-(1 << 31), 1 << 31, size=37, dtype=np.int64).astype(np.int32)
    msg = Message(msg_type, job=65535, worker=31, slot=8191, chunk=(1 << 32) - 1, flags=Flag.VER,
                  num_workers=8 if msg_type != MsgType.CONTRIB else 0,
                  bitmap=0xFFFFFFFF if msg_type != MsgType.CONTRIB else 0, epoch=0xFFFFFFFF, values=values)
    data = wire.pack(msg, k=64)
    assert len(data) == 24 + 256
    back = wire.unpack(data, k=64)
    assert back == msg
    assert back.count == 37 and back.values.dtype == np.int32
    assert data[24 + 37 * 4:] == bytes(4 * (64 - 37))


@pytest.mark.parametrize("msg_type", [MsgType.REDUCE, MsgType.BCAST, MsgType.RESULT, MsgType.STATUS])
def test_header_only_exact_bytes_and_round_trip(msg_type: MsgType) -> None:
    """HDRONLY: the 24-byte header alone, ``count`` the chunk's valid values all the same."""
    msg = Message(msg_type, job=1, worker=2, slot=3, chunk=4, flags=Flag.HDRONLY | Flag.RETRANS,
                  epoch=7, chunk_count=5)
    data = wire.pack(msg, k=8)
    assert data == struct.pack("!BBHHHIHHII", msg_type, 6, 1, 2, 3, 4, 5, 0, 0, 7)
    back = wire.unpack(data + bytes(18), k=8)  # Ethernet padding after it is ignored
    assert back == msg and back.count == 5 and back.header_only and back.values.size == 0
    with pytest.raises(wire.WireError, match="HDRONLY with 2 values"):
        wire.pack(Message(msg_type, flags=Flag.HDRONLY, values=np.zeros(2, np.int32)), k=8)
    with pytest.raises(wire.WireError, match="count 9 exceeds K=8"):
        wire.pack(Message(msg_type, flags=Flag.HDRONLY, chunk_count=9), k=8)
    assert wire.message_bytes(False, 8) == 24 and wire.message_bytes(True, 8) == 56


def test_status_header_bytes() -> None:
    msg = Message(MsgType.STATUS, job=7, worker=2, slot=1, chunk=9, num_workers=4, bitmap=0b1011,
                  epoch=5, values=np.zeros(0, np.int32))
    assert wire.pack(msg, k=1) == struct.pack("!BBHHHIHHII", 3, 0, 7, 2, 1, 9, 0, 4, 11, 5) + bytes(4)


def test_pack_errors_name_field_and_value() -> None:
    with pytest.raises(wire.WireError, match="'worker': 65536 does not fit in 16 bits"):
        wire.pack(Message(MsgType.CONTRIB, worker=65536))
    with pytest.raises(wire.WireError, match="count 5 exceeds K=4"):
        wire.pack(Message(MsgType.CONTRIB, values=np.zeros(5, np.int32)), k=4)
    with pytest.raises(wire.WireError, match="outside int32 range"):
        wire.pack(Message(MsgType.CONTRIB, values=np.array([1 << 31], np.int64)), k=4)


def test_unpack_errors() -> None:
    with pytest.raises(wire.WireError, match="shorter than the 24-byte header"):
        wire.unpack(b"\x01" * 10)
    bad = struct.pack("!BBHHHIHHII", 2, 0, 0, 0, 0, 0, 9, 0, 0, 1) + bytes(32)
    with pytest.raises(wire.WireError, match="count 9 exceeds K=8"):
        wire.unpack(bad, k=8)
    with pytest.raises(wire.WireError, match="need 56 for K=8"):
        wire.unpack(bad[:4] + bytes(8) + b"\x00\x02" + bad[14:40], k=8)


def test_frame_exact_bytes_and_parse() -> None:
    src = wire.Endpoint("02:00:00:00:00:01", "10.0.0.1", 18766)
    dst = wire.Endpoint("02:00:00:00:00:fe", "10.0.0.254", 18766)
    payload = wire.pack(Message(MsgType.CONTRIB, job=1, values=np.array([5], np.int32)), k=2)
    data = wire.frame(src, dst, payload, ident=0x1234)
    ip_header = bytes.fromhex("4500" "003c" "1234" "4000" "4011" "0000" "0a000001" "0a0000fe")
    checksum = wire.ipv4_checksum(ip_header)
    expected = (bytes.fromhex("0200000000fe" "020000000001" "0800")
                + ip_header[:10] + struct.pack("!H", checksum) + ip_header[12:]
                + bytes.fromhex("494e" "494e" "0028" "0000") + payload)
    assert data == expected
    # a valid header sums to 0xffff with its checksum in place
    assert wire.ipv4_checksum(data[14:34]) == 0
    parsed = wire.parse_frame(data + bytes(6))  # Ethernet padding is not payload
    assert parsed is not None
    assert parsed.payload == payload
    assert (parsed.src_port, parsed.dst_port) == (18766, 18766)
    assert parsed.dst_mac == bytes.fromhex("0200000000fe")
    assert wire.parse_frame(data[:20]) is None
    assert wire.parse_frame(data[:12] + b"\x86\xdd" + data[14:]) is None


def test_address_errors() -> None:
    with pytest.raises(wire.WireError, match="MAC address '02:00'"):
        wire.mac_bytes("02:00")
    with pytest.raises(wire.WireError, match="IPv4 address '10.0.1'"):
        wire.ip_bytes("10.0.1")


def test_scapy_dissects_full_frame() -> None:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from innet.wire.scapy_layer import InnetAgg

    values = np.array([3, -4, 1 << 30], np.int32)
    msg = Message(MsgType.RESULT, job=9, worker=2, slot=5, chunk=77, flags=Flag.VER,
                  num_workers=4, bitmap=0xF, epoch=3, values=values)
    data = wire.frame(wire.Endpoint("02:00:00:00:00:fe", "10.0.0.254"),
                      wire.Endpoint("02:00:00:00:00:02", "10.0.0.2", 40000), wire.pack(msg, k=8))
    pkt = Ether(data)
    assert pkt[IP].src == "10.0.0.254" and pkt[UDP].dport == 40000
    agg = pkt[InnetAgg]
    assert (agg.msg_type, agg.job, agg.worker, agg.slot, agg.chunk, agg.count,
            agg.num_workers, agg.bitmap, agg.epoch) == (2, 9, 2, 5, 77, 3, 4, 0xF, 3)
    assert agg.flags.VER and not agg.flags.RETRANS
    assert list(agg.values()) == [3, -4, 1 << 30]
    # built by scapy: the same bytes as wire.pack
    built = bytes(InnetAgg(msg_type=2, flags=1, job=9, worker=2, slot=5, chunk=77, count=3,
                           num_workers=4, bitmap=0xF, epoch=3))
    assert built == wire.pack(msg, k=8)[:24]
    assert [f.name for f in InnetAgg.fields_desc] == list(wire.HEADER_FIELDS)
    ack = Ether(wire.frame(wire.Endpoint("02:00:00:00:00:fe", "10.0.0.254"),
                           wire.Endpoint("02:00:00:00:00:02", "10.0.0.2", 40000),
                           wire.pack(Message(MsgType.RESULT, flags=Flag.HDRONLY, chunk_count=3), k=8)))
    assert ack[InnetAgg].flags.HDRONLY and ack[InnetAgg].count == 3
    assert ack[InnetAgg].values().size == 0


# -- constants against p4/innet.p4 ----------------------------------------------------------

P4_DIR = Path(__file__).resolve().parents[2] / "p4"


def _p4_consts() -> dict[str, int]:
    text = "\n".join(p.read_text() for p in sorted((P4_DIR / "innet").glob("*.p4")))
    return {name: int(value, 0) for name, value in
            re.findall(r"const\s+bit<\d+>\s+(\w+)\s*=\s*(0x[0-9A-Fa-f]+|\d+)\s*;", text)}


def test_constants_match_p4_source() -> None:
    consts = _p4_consts()
    assert consts["INNET_UDP_PORT"] == wire.UDP_PORT
    assert {m.name: m.value for m in MsgType} == {
        name: consts[f"INNET_{name}"] for name in ("CONTRIB", "RESULT", "STATUS", "STALE", "REDUCE", "BCAST")}
    assert consts["INNET_HDRONLY"] == Flag.HDRONLY
    assert {m.name: m.value for m in wire.Mode} == {
        name: consts[f"INNET_MODE_{name}"] for name in ("SUM", "SGD", "MOMENTUM")}
    config = (P4_DIR / "innet" / "config.p4").read_text()
    assert int(re.search(r"#define\s+INNET_K\s+(\d+)", config).group(1)) == wire.DEFAULT_K


def test_header_layout_matches_p4_source() -> None:
    headers = (P4_DIR / "innet" / "headers.p4").read_text()
    body = re.search(r"header\s+innet_t\s*\{(.*?)\}", headers, re.S).group(1)
    fields = re.findall(r"bit<(\d+)>\s+(\w+)\s*;", body)
    assert [name for _, name in fields] == list(wire.HEADER_FIELDS)
    assert [int(bits) for bits, _ in fields] == list(wire.HEADER_BITS)


def test_control_plane_names_match_p4info() -> None:
    from innet.switch.frontend import compile_file  # type: ignore[attr-defined]
    from innet.switch.p4info import build_p4info

    info = build_p4info(compile_file(str(P4_DIR / "innet.p4"), include_dirs=(str(P4_DIR),)))
    actions = {a.preamble.name: [p.name for p in a.params] for a in info.actions}
    assert actions["MyIngress.set_job"] == ["mode", "num_workers", "mcast_grp", "slot_base",
                                            "slot_count", "param_base", "param_chunks", "lr",
                                            "lr_shift", "beta", "beta_shift", "epoch"]
    assert actions["MyEgress.set_worker"] == ["mac", "ip", "udp_port"]
    assert actions["MyIngress.set_owner"] == ["rank", "mcast_grp"]
    tables = {t.preamble.name for t in info.tables}
    assert {"MyIngress.innet_jobs", "MyEgress.innet_workers", "MyIngress.innet_owners"} <= tables
    counters = {c.preamble.name for c in info.counters}
    assert {f"MyIngress.innet_{n}" for n in ("contributions", "completions", "duplicates",
                                               "drops", "stale")} <= counters
    registers = {r.preamble.name for r in info.registers}
    for i in (0, wire.DEFAULT_K - 1):
        assert {"MyIngress.innet_epoch", f"MyIngress.innet_acc_{i}", f"MyIngress.innet_param_{i}",
                f"MyIngress.innet_mom_{i}"} <= registers


# -- K from the MTU (jumbo frames) -----------------------------------------------------------

def test_supported_k_matches_repeat_p4() -> None:
    import re
    from pathlib import Path

    repeat = (Path(__file__).resolve().parents[2] / "p4" / "innet" / "repeat.p4").read_text()
    assert tuple(int(k) for k in re.findall(r"INNET_K == (\d+)", repeat)) == wire.SUPPORTED_K


@pytest.mark.parametrize("mtu,k", [(9000, 2048), (8244, 2048), (8243, 1024), (1500, 256),
                                   (1076, 256), (1075, 64), (576, 64), (308, 64), (307, 4), (68, 4)])
def test_k_for_mtu_is_the_largest_fitting_k(mtu: int, k: int) -> None:
    assert wire.k_for_mtu(mtu) == k
    assert wire.IP_OVERHEAD + wire.message_len(k) <= mtu


def test_k_for_mtu_too_small() -> None:
    with pytest.raises(wire.WireError, match=r"MTU 67: too small for an innet packet \(K=4 needs 68 bytes\)"):
        wire.k_for_mtu(67)
