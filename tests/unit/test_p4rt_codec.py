"""innet.switch.p4rt_codec: bytestrings and the priority rule (shared by the server and
innet.controller's schema and entities)."""

from __future__ import annotations

import pytest

from innet.switch.p4rt_codec.bytestrings import decode_bytes, encode_bytes, encode_padded
from innet.switch.p4rt_codec.matches import priority_problem
from innet.switch.p4rt_codec.status import P4RuntimeError


def test_bytestrings_are_canonical_out_and_checked_in():
    assert [encode_bytes(n) for n in (0, 1, 255, 256)] == [b"\x00", b"\x01", b"\xff", b"\x01\x00"]
    assert encode_padded(1, 9) == b"\x00\x01"
    assert decode_bytes(b"\x00\x01", 9, "port") == decode_bytes(b"\x01", 9, "port") == 1
    with pytest.raises(ValueError, match="bytestring of negative value -1"):
        encode_bytes(-1)
    with pytest.raises(P4RuntimeError, match="port: value 0x0200 does not fit in 9 bits"):
        decode_bytes(b"\x02\x00", 9, "port")


def test_priority_rule():
    assert priority_problem("t", True, 1) is None and priority_problem("t", False, 0) is None
    assert priority_problem("I.mixed", True, 0) == (
        "table 'I.mixed' has ternary/range/optional keys: priority must be > 0, got 0")
    assert priority_problem("I.lpm", False, 3) == "table 'I.lpm' has only exact/lpm keys: priority must be 0, got 3"
