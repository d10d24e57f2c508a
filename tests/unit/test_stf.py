"""STF parsing and key values (innet.switch.stf)."""

import re

import pytest

from innet.switch.stf import Expect, StfError, expect_matches, key_spec, parse_stf, parse_value

TEXT = """
# comment
add MyIngress.t 10 h.k:0x12** a(v:0x01)   # trailing comment
setdefault t dflt(v:0x22)
mc_node_create 10 1 2
packet 0 01 02 ff
expect 1 01 ** ff $
expect 2
"""


def test_parse_sections() -> None:
    t = parse_stf(TEXT, "x.stf")
    assert [c for _, c, _ in t.control] == ["add", "setdefault", "mc_node_create"]
    assert t.control[2][2] == ["10", "1", "2"]
    assert t.packets == [(6, 0, bytes([1, 2, 0xFF]))]
    assert t.expects[0] == Expect(1, "01**ff", True, 7)
    assert t.expects[1].pattern == "" and not t.expects[1].exact


def test_unknown_command_is_located() -> None:
    with pytest.raises(StfError, match=r"x\.stf:1: unknown STF command 'bogus'"):
        parse_stf("bogus 1", "x.stf")


def test_star_nibbles() -> None:
    assert parse_value("0x0a01****", 32) == (0x0A010000, 0xFFFF0000, True)
    assert parse_value("0x1*3*", 16) == (0x1030, 0xF0F0, True)
    assert parse_value("255", 8) == (255, 255, False)


def test_key_specs_per_kind() -> None:
    assert key_spec("lpm", "0x0a01****", 32).prefix_len == 16
    assert key_spec("lpm", "0x0a000000/8", 32).prefix_len == 8
    ks = key_spec("ternary", "0x0*", 8)
    assert (ks.value, ks.mask) == (0, 0xF0)
    ks = key_spec("ternary", "0x10&&&0xf0", 8)
    assert (ks.value, ks.mask) == (0x10, 0xF0)
    assert key_spec("exact", "7", 8).value == 7
    with pytest.raises(ValueError, match="not a prefix"):
        key_spec("lpm", "0x*a", 8)


def test_expect_matching() -> None:
    assert expect_matches(Expect(1, "01**ff", True, 1), bytes([1, 0x77, 0xFF]))
    assert not expect_matches(Expect(1, "01**ff", True, 1), bytes([1, 0x77, 0xFF, 0]))
    assert expect_matches(Expect(1, "01**ff", False, 1), bytes([1, 0x77, 0xFF, 0]))
    assert expect_matches(Expect(1, "", False, 1), b"anything")


COUNTER_P4 = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    counter(32w4, CounterType.packets_and_bytes) c;
    apply { sm.egress_spec = 1; c.count((bit<32>)h.h.k); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H h, inout M m) { apply { } }
control D(packet_out pkt, in H h) { apply { pkt.emit(h.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize(
    ("check", "problem"),
    [
        ("check_counter I.c(1) packets == 2", None),
        ("check_counter c(1) bytes == 5", None),
        ("counter_read c 1 2 5", None),
        ("check_counter c(1) packets == 3", r"line 5: counter c\[1\]: packets = 2, expected == 3"),
        ("counter_read c 1 2 6", r"bytes = 5, expected == 6"),
        ("check_counter c(9) == 0", r"check_counter: .*9"),
        ("check_counter c[1] == 0", r"check_counter takes <counter>\(<index>\)"),
        ("counter_read c 1", r"counter_read takes"),
        ("check_counter nosuch(0) == 0", r"nosuch"),
    ],
)
def test_counter_checks_are_evaluated(tmp_path, check: str, problem: str | None) -> None:
    from innet.switch.stf import run_stf

    prog = tmp_path / "c.p4"
    prog.write_text(COUNTER_P4)
    stf = tmp_path / "c.stf"
    stf.write_text(f"packet 0 01 aa\nexpect 1 01 aa $\npacket 0 01 bb cc\nexpect 1 01 bb cc $\n{check}\n")
    result = run_stf(prog, stf)
    if problem is None:
        assert result.passed, result.message
    else:
        assert not result.passed
        assert re.search(problem, result.message), result.message


STACK_KEY_P4 = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; }
struct H { h_t[2] s; }
struct M { }
parser P(packet_in pkt, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.s.next); pkt.extract(h.s.next); transition accept; }
}
control VC(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action to(bit<9> p) { sm.egress_spec = p; }
    table t { key = { h.s[1].k : exact; } actions = { to; } default_action = to(0); }
    apply { t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H h, inout M m) { apply { } }
control D(packet_out pkt, in H h) { apply { pkt.emit(h.s); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_stack_element_key_in_bmv2_spelling(tmp_path) -> None:
    """p4c's STF files name a key on stack element 1 as ``s$1.k`` (BMv2 JSON's name)."""
    from innet.switch.stf import run_stf

    prog = tmp_path / "s.p4"
    prog.write_text(STACK_KEY_P4)
    stf = tmp_path / "s.stf"
    stf.write_text("add I.t h.s$1.k:0x22 to(p:3)\npacket 0 11 22\nexpect 3 11 22 $\n")
    result = run_stf(prog, stf)
    assert result.passed, result.message
