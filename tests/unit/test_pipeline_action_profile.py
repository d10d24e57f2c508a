"""Action profiles and selectors in the executor: members, groups, indirect entries (profiles.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.switch.frontend import compile_source
from innet.switch.pipeline import (
    ControlPlaneError,
    EntryExistsError,
    EntryNotFoundError,
    InUseError,
    KeySpec,
    Pipeline,
    UnsupportedError,
)
from innet.switch.pipeline.hashing import crc32

TABLES = Path(__file__).resolve().parents[1] / "conformance" / "tables"

SELECTOR = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<16> s; bit<8> tag; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port, bit<8> tag) { sm.egress_spec = port; h.h.tag = tag; }
    action other() { h.h.tag = 0x99; }
    @max_group_size(4)
    action_selector(HashAlgorithm.ALGO, 64, 16) sel;
    table t {
        key = { h.h.k : exact; h.h.s : selector; }
        actions = { fwd; }
        implementation = sel;
    }
    table u {
        key = { h.h.k : exact; }
        actions = { other; }
        default_action = other();
    }
    apply { sm.egress_spec = 9; t.apply(); u.apply(); }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
"""


def selector(algo: str = "crc32") -> Pipeline:
    return Pipeline(compile_source(SELECTOR.replace("ALGO", algo)))


def pkt(k: int, s: int) -> bytes:
    return bytes([k]) + s.to_bytes(2, "big") + b"\x00"


def port_of(pl: Pipeline, k: int, s: int) -> int:
    (out,) = pl.process(0, pkt(k, s))
    return out[0]


@pytest.fixture
def profile() -> Pipeline:
    return Pipeline.from_file(TABLES / "action_profile.p4")


def test_members_and_entries(profile: Pipeline) -> None:
    ap = profile.action_profile("ap")
    assert profile.action_profile("Ing.ap") is ap and not ap.with_selector and ap.size == 32
    ap.add_member(10, "set_a", {"v": 0x11, "port": 2})
    profile.table_insert("t", [KeySpec(5)], member=10)
    assert profile.process(0, bytes([5, 0, 0, 0])) == [(2, bytes([5, 0, 0x11, 0]))]
    ap.modify_member(10, "set_b", [0x22])
    assert profile.process(0, bytes([5, 0, 0, 0])) == [(1, bytes([5, 0, 0, 0x22]))]
    e = profile.table_entries("t")[0]
    assert e.members == ("member", 10)


def test_member_errors(profile: Pipeline) -> None:
    ap = profile.action_profile("ap")
    ap.add_member(1, "set_b", [1])
    with pytest.raises(EntryExistsError, match="member 1 already exists"):
        ap.add_member(1, "set_b", [1])
    with pytest.raises(ControlPlaneError, match="no action named 'set_c'.*Did you mean"):
        ap.add_member(2, "set_c", [1])
    with pytest.raises(ControlPlaneError, match=r"value 0x100 does not fit parameter v \(bit<8>\)"):
        ap.add_member(2, "set_b", [0x100])
    with pytest.raises(EntryNotFoundError, match="no member 7"):
        profile.table_insert("t", [KeySpec(1)], member=7)
    with pytest.raises(ControlPlaneError, match="not an action selector: it has no groups"):
        ap.create_group(1, [1])
    profile.table_insert("t", [KeySpec(1)], member=1)
    with pytest.raises(InUseError, match="member 1 is still used"):
        ap.delete_member(1)
    profile.table_delete("t", [KeySpec(1)])
    ap.delete_member(1)
    assert ap.members == {}


def test_direct_actions_rejected_on_indirect_tables(profile: Pipeline) -> None:
    with pytest.raises(ControlPlaneError, match="uses action profile 'Ing.ap'.*members or groups"):
        profile.table_insert("t", [KeySpec(1)], "set_b", [1])
    with pytest.raises(ControlPlaneError, match="set a default member or group"):
        profile.table_set_default("t", "set_b", [1])


def test_default_member_and_reset(profile: Pipeline) -> None:
    ap = profile.action_profile("ap")
    ap.add_member(0, "set_a", [0x44, 6])
    t = profile.table("t")
    t.set_default_indirect(member=0)
    assert profile.process(0, bytes([9, 0, 0, 0])) == [(6, bytes([9, 0, 0x44, 0]))]
    with pytest.raises(InUseError):
        ap.delete_member(0)
    t.reset_default()
    assert profile.process(0, bytes([9, 0, 0, 0])) == [(3, bytes([9, 0, 0xEE, 0]))]
    ap.delete_member(0)


def test_member_handles_reuse_the_lowest_free() -> None:
    pl = selector()
    sel = pl.action_profile("sel")
    for i in (100, 50, 7):
        sel.add_member(i, "fwd", [i % 64, 0])
    assert [sel.members[i].handle for i in (100, 50, 7)] == [0, 1, 2]
    sel.delete_member(50)
    sel.add_member(3, "fwd", [3, 0])
    assert sel.members[3].handle == 1


def test_group_order_is_by_handle_and_hash_is_crc32_mod_size() -> None:
    pl = selector("crc32")
    sel = pl.action_profile("sel")
    for port in (1, 2, 3):
        sel.add_member(port * 10, "fwd", [port, port])  # handles 0, 1, 2
    sel.create_group(1, [30, 10, 20])  # added out of order
    pl.table_insert("t", [KeySpec(1)], group=1)
    for s in range(40):
        h = crc32(s.to_bytes(2, "big"))
        assert port_of(pl, 1, s) == [1, 2, 3][h % 3], s


def test_weights_repeat_a_member() -> None:
    pl = selector("identity")
    sel = pl.action_profile("sel")
    sel.add_member(0, "fwd", [1, 0])
    sel.add_member(1, "fwd", [2, 0])
    sel.create_group(5, [(1, 1), (0, 3)])  # places: m0 m0 m0 m1
    pl.table_insert("t", [KeySpec(1)], group=5)
    assert [port_of(pl, 1, s) for s in range(8)] == [1, 1, 1, 2] * 2


def test_group_changes_follow_entries_and_errors() -> None:
    pl = selector("identity")
    sel = pl.action_profile("sel")
    sel.add_member(0, "fwd", [1, 0])
    sel.add_member(1, "fwd", [2, 0])
    sel.create_group(1)
    with pytest.raises(ControlPlaneError, match="group 1 of action selector 'Ing.sel' is empty"):
        pl.table_insert("t", [KeySpec(1)], group=1)
    with pytest.raises(EntryNotFoundError, match="no group 2"):
        pl.table_insert("t", [KeySpec(1)], group=2)
    with pytest.raises(EntryExistsError, match="group 1 already exists"):
        sel.create_group(1)
    sel.set_group_members(1, [0])
    pl.table_insert("t", [KeySpec(1)], group=1)
    assert port_of(pl, 1, 1) == 1
    sel.add_member_to_group(1, 1)
    assert [port_of(pl, 1, s) for s in (0, 1)] == [1, 2]
    with pytest.raises(EntryExistsError, match="member 1 is already in group 1"):
        sel.add_member_to_group(1, 1)
    with pytest.raises(InUseError, match="member 0 is still used"):
        sel.delete_member(0)  # referenced by the group
    with pytest.raises(InUseError, match="group 1 is still used by 1 table entry"):
        sel.delete_group(1)
    sel.remove_member_from_group(1, 0)
    assert [port_of(pl, 1, s) for s in (0, 1)] == [2, 2]
    sel.remove_member_from_group(1, 1)
    assert pl.process(0, pkt(1, 0)) == [(9, pkt(1, 0)[:3] + b"\x99")]  # empty group: no action
    pl.table_modify("t", [KeySpec(1)], member=0)
    assert port_of(pl, 1, 5) == 1
    sel.delete_group(1)
    with pytest.raises(InUseError):
        sel.delete_member(0)
    pl.table_delete("t", [KeySpec(1)])
    sel.delete_member(0)


def test_a_group_entry_misses_fall_back_to_the_default_group() -> None:
    pl = selector("identity")
    sel = pl.action_profile("sel")
    sel.add_member(0, "fwd", [4, 0])
    sel.add_member(1, "fwd", [5, 0])
    sel.create_group(0, [0, 1])
    pl.table("t").set_default_indirect(group=0)
    assert [port_of(pl, 77, s) for s in (2, 3)] == [4, 5]


def test_action_run_and_hit_through_members() -> None:
    src = SELECTOR.replace("ALGO", "crc16").replace(
        "apply { sm.egress_spec = 9; t.apply(); u.apply(); }",
        "apply { sm.egress_spec = 9; if (t.apply().hit) { h.h.k = 0xAA; } "
        "switch (t.apply().action_run) { fwd: { h.h.s = 1; } } }")
    pl = Pipeline(compile_source(src))
    sel = pl.action_profile("sel")
    sel.add_member(0, "fwd", [3, 7])
    pl.table_insert("t", [KeySpec(1)], member=0)
    pl.table_insert("t", [KeySpec(0xAA)], member=0)
    assert pl.process(0, pkt(1, 0x500)) == [(3, bytes([0xAA, 0, 1, 7]))]
    assert pl.process(0, pkt(2, 0x500)) == [(9, bytes([2, 5, 0, 0]))]


def test_selector_key_without_selector_is_a_located_error() -> None:
    src = SELECTOR.replace("implementation = sel;", "").replace("ALGO", "crc16")
    with pytest.raises(UnsupportedError, match=r"<string>:\d+:\d+: unsupported: table t: a 'selector' key needs"):
        Pipeline(compile_source(src))


def test_random_selector_algorithm_is_a_located_error() -> None:
    with pytest.raises(UnsupportedError, match=r"<string>:\d+:\d+: .*action_selector sel: hash algorithm random"):
        selector("random")
