"""Public Pipeline API on a compiled program (front-end + executor)."""

from pathlib import Path

import pytest

from innet.switch.pipeline import ControlPlaneError, KeySpec, Pipeline, UnsupportedError
from innet.switch.pipeline.errors import PacketError

SHARED = Path(__file__).resolve().parents[1] / "conformance" / "bmv2"  # the vendored BMv2-confirmed corpus


@pytest.fixture(scope="module")
def lpm() -> Pipeline:
    return Pipeline.from_file(SHARED / "lpm_overlap.p4")


def test_names_exact_and_suffix(lpm: Pipeline) -> None:
    assert lpm.table("Ing.lpm_t") is lpm.table("lpm_t")
    with pytest.raises(ControlPlaneError, match="no table named 'lpm_x'.*Did you mean"):
        lpm.table("lpm_x")


def test_insert_process_delete(lpm: Pipeline) -> None:
    pkt = bytes.fromhex("0a010203" "00" "00")
    assert lpm.process(1, pkt) == [(0, bytes.fromhex("0a010203ee42"))]  # default miss(0xEE, 0x42)
    lpm.table_insert("lpm_t", [KeySpec(0x0A000000, prefix_len=8)], "route", {"tag": 8, "port": 5})
    assert lpm.process(1, pkt) == [(5, bytes.fromhex("0a0102030800"))]
    assert [e.action for e in lpm.table_entries("lpm_t")] == ["Ing.route"]
    lpm.table_delete("lpm_t", [KeySpec(0x0A000000, prefix_len=8)])
    assert lpm.process(1, pkt)[0][0] == 0


def test_tables_share_the_packet_lock(lpm: Pipeline) -> None:
    assert all(t.lock is lpm.lock for t in lpm.tables.values())
    with lpm.atomic():
        lpm.table_set_default("lpm_t", "miss", {"tag": 1, "arg": 2})
    assert lpm.process(0, bytes(6)) == [(0, bytes.fromhex("000000000102"))]


def test_registers_by_name() -> None:
    pl = Pipeline.from_file(SHARED / "registers.p4")
    pl.register_write("r", 2, 100)
    assert pl.register_read("Ing.r", 2) == 100
    assert pl.register_read("r") == [0, 0, 100, 0, 0, 0, 0, 0]
    with pytest.raises(ControlPlaneError, match="out of range"):
        pl.register_write("r", 8, 1)
    assert "def C" in pl.source


def test_unsupported_is_located(tmp_path: Path) -> None:
    src = (SHARED / "drop.p4").read_text().replace(
        "control VC(inout headers_t h, inout meta_t m) { apply { } }",
        "control VC(inout headers_t h, inout meta_t m) { Checksum16() ck; apply { } }")
    p = tmp_path / "ck.p4"
    p.write_text(src)
    with pytest.raises(UnsupportedError, match=r"ck\.p4:\d+:\d+: unsupported: extern object Checksum16"):
        Pipeline.from_file(p)


@pytest.mark.parametrize("port", [-1, 512, 1 << 32])
def test_ingress_port_outside_bit9_is_refused(lpm: Pipeline, port: int) -> None:
    with pytest.raises(PacketError, match=rf"ingress port {port} is outside 0\.\.511"):
        lpm.process(port, bytes(6))
    with pytest.raises(ValueError):  # PacketError is a ValueError too
        lpm.process(port, bytes(6))
    assert len(lpm.process(511, bytes(6))) == 1  # the largest bit<9> port enters
