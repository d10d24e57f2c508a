"""Match engine (innet.switch.pipeline.tables)."""

import pytest

from innet.switch.pipeline.errors import ControlPlaneError, EntryExistsError, EntryNotFoundError
from innet.switch.pipeline.tables import ActionInfo, KeyDef, KeySpec, Table


def _fn(*a: object) -> None:
    return None


def _table(keys: list[KeyDef]) -> Table:
    acts = [ActionInfo("set", _fn, (("v", 8),), 0), ActionInfo("NoAction", _fn, (), 1)]
    return Table("Ing.t", keys, acts, ("NoAction", ()))


def test_exact_hit_miss_and_errors() -> None:
    t = _table([KeyDef("k", "exact", 8)])
    t.insert([KeySpec(5)], "set", {"v": 9})
    assert t.lookup(5)[1] == (9,) and t.lookup(5)[3] is True
    assert t.lookup(6)[3] is False and t.lookup(6)[2] == 1
    with pytest.raises(EntryExistsError):
        t.insert([KeySpec(5)], "set", [1])
    with pytest.raises(EntryNotFoundError):
        t.delete([KeySpec(7)])
    with pytest.raises(ControlPlaneError, match="does not fit parameter v"):
        t.insert([KeySpec(1)], "set", [256])
    with pytest.raises(ControlPlaneError, match="Did you mean 'set'"):
        t.insert([KeySpec(1)], "sett", [1])


def test_cache_is_invalidated_on_change() -> None:
    t = _table([KeyDef("k", "exact", 8)])
    assert t.lookup(5)[3] is False
    t.insert([KeySpec(5)], "set", [1])
    assert t.lookup(5)[3] is True
    t.modify([KeySpec(5)], "set", [2])
    assert t.lookup(5)[1] == (2,)
    t.delete([KeySpec(5)])
    assert t.lookup(5)[3] is False


def test_lpm_longest_prefix_wins() -> None:
    t = _table([KeyDef("a", "lpm", 32)])
    for plen, v in ((8, 8), (16, 16), (24, 24), (32, 32)):
        t.insert([KeySpec(0x0A010203, prefix_len=plen)], "set", [v])
    assert t.lookup(0x0A010203)[1] == (32,)
    assert t.lookup(0x0A010204)[1] == (24,)
    assert t.lookup(0x0A01FF00)[1] == (16,)
    assert t.lookup(0x0AFF0000)[1] == (8,)
    assert t.lookup(0x0B000000)[3] is False


def test_ternary_larger_priority_wins() -> None:
    t = _table([KeyDef("k", "ternary", 16)])
    t.insert([KeySpec(0x1200, mask=0xFF00)], "set", [1], priority=10)
    t.insert([KeySpec(0x1030, mask=0xF0F0)], "set", [2], priority=20)
    t.insert([KeySpec(0, mask=0)], "set", [3], priority=5)
    assert t.lookup(0x1234)[1] == (2,)
    assert t.lookup(0x1255)[1] == (1,)
    assert t.lookup(0x9999)[1] == (3,)
    with pytest.raises(ControlPlaneError, match="priority"):
        t.insert([KeySpec(1, mask=1)], "set", [1], priority=0)


def test_const_entries_earlier_wins_with_range_and_optional() -> None:
    t = _table([KeyDef("p", "range", 16), KeyDef("o", "optional", 8)])
    t.add_const_entries([
        ([KeySpec(100, hi=199), KeySpec(0, mask=0)], "set", (1,), None),
        ([KeySpec(0, hi=1023), KeySpec(6, mask=0xFF)], "set", (2,), None),
    ])
    assert t.lookup((150, 6))[1] == (1,)
    assert t.lookup((200, 6))[1] == (2,)
    assert t.lookup((200, 7))[3] is False
    with pytest.raises(ControlPlaneError, match="const"):
        t.insert([KeySpec(1, hi=1), KeySpec(0, mask=0)], "set", [1], priority=9)


def test_set_default_and_keyless() -> None:
    t = Table("Ing.k", [], [ActionInfo("set", _fn, (("v", 8),), 0)], ("set", (1,)))
    assert t.lookup(())[1] == (1,)
    t.set_default("set", [7])
    assert t.lookup(())[1] == (7,)
