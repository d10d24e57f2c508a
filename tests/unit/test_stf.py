"""STF parsing and key values (innet.switch.stf)."""

import pytest

from innet.switch.stf import Expect, StfError, _matches, key_spec, parse_stf, parse_value

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
    assert _matches(Expect(1, "01**ff", True, 1), bytes([1, 0x77, 0xFF]))
    assert not _matches(Expect(1, "01**ff", True, 1), bytes([1, 0x77, 0xFF, 0]))
    assert _matches(Expect(1, "01**ff", False, 1), bytes([1, 0x77, 0xFF, 0]))
    assert _matches(Expect(1, "", False, 1), b"anything")
