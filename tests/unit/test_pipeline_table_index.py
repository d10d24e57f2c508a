"""Incrementally maintained table indexes (switch/pipeline/tables.py): random interleavings of
inserts, deletes and modifies on exact, LPM, ternary and range/optional tables, every lookup
compared with a brute-force matcher written from the selection rules (larger priority wins,
ties to the earlier entry; longest prefix; exact)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from innet.switch.pipeline.errors import EntryExistsError
from innet.switch.pipeline.tables import ActionInfo, KeyDef, KeySpec, Table


def _fn(*a: object) -> None:
    return None


@dataclass
class Ref:
    """An installed entry as the brute-force matcher sees it."""

    keys: list[KeySpec]
    priority: int
    order: int  # insertion order


def spec_matches(kd: KeyDef, ks: KeySpec, k: int) -> bool:
    full = (1 << kd.width) - 1
    if kd.kind == "exact":
        return k == ks.value
    if kd.kind == "lpm":
        plen = ks.prefix_len if ks.prefix_len is not None else kd.width
        return k >> (kd.width - plen) == ks.value >> (kd.width - plen)
    if kd.kind in ("ternary", "optional"):
        m = full if ks.mask is None else ks.mask
        return k & m == ks.value & m
    hi = ks.value if ks.hi is None else ks.hi
    return ks.value <= k <= hi


def brute(keys: list[KeyDef], entries: list[Ref], key: tuple[int, ...]) -> Ref | None:
    hits = [e for e in entries if all(spec_matches(kd, ks, k) for kd, ks, k in zip(keys, e.keys, key))]
    if not hits:
        return None
    kinds = [kd.kind for kd in keys]
    if any(k in ("ternary", "range", "optional") for k in kinds):
        return max(hits, key=lambda e: (e.priority, -e.order))
    if "lpm" in kinds:
        li = kinds.index("lpm")
        return max(hits, key=lambda e: e.keys[li].prefix_len or 0)
    assert len(hits) == 1
    return hits[0]


def random_spec(rng: random.Random, kd: KeyDef) -> KeySpec:
    full = (1 << kd.width) - 1
    v = rng.randint(0, full)
    if kd.kind == "exact":
        return KeySpec(v)
    if kd.kind == "lpm":
        plen = rng.randint(0, kd.width)
        return KeySpec(v & (full ^ ((1 << (kd.width - plen)) - 1)), prefix_len=plen)
    if kd.kind == "ternary":
        m = rng.choice([full, 0, rng.randint(0, full), full ^ 1, full ^ 0xF])
        return KeySpec(v & m, mask=m)
    if kd.kind == "optional":
        m = rng.choice([0, full])
        return KeySpec(v & m, mask=m)
    hi = min(full, v + rng.choice([0, 1, 5, 40]))
    return KeySpec(v, hi=hi)


TABLES = {
    "exact": [KeyDef("a", "exact", 4), KeyDef("b", "exact", 3)],
    "lpm": [KeyDef("a", "exact", 2), KeyDef("p", "lpm", 8)],
    "lpm_only": [KeyDef("p", "lpm", 6)],
    "ternary": [KeyDef("t", "ternary", 6), KeyDef("e", "exact", 1)],
    "range": [KeyDef("r", "range", 7), KeyDef("o", "optional", 2)],
}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", sorted(TABLES))
def test_random_updates_match_brute_force(name: str, seed: int) -> None:
    keys = TABLES[name]
    rng = random.Random(f"{name}-{seed}")
    t = Table("Ing.t", keys, [ActionInfo("set", _fn, (("v", 16),), 0), ActionInfo("NoAction", _fn, (), 1)],
              ("NoAction", ()))
    prio = t.needs_priority
    live: dict[int, Ref] = {}  # entry handle -> reference
    order = 0

    def check() -> None:
        for _ in range(25):
            key = tuple(rng.randint(0, (1 << kd.width) - 1) for kd in keys)
            if live and rng.random() < 0.5:  # aim at an entry
                e = rng.choice(list(live.values()))
                key = tuple(ks.value if kd.kind != "range" else rng.randint(ks.value, ks.hi or ks.value)
                            for kd, ks in zip(keys, e.keys))
            want = brute(keys, list(live.values()), key)
            got = t.lookup(key[0] if len(keys) == 1 else key)
            got_entry = got[4]
            if want is None:
                assert got_entry is None and got[3] is False, (key, got_entry)
            else:
                assert got_entry is not None and live[got_entry.handle] is want, (key, got_entry, want)

    for step in range(300):
        op = rng.random()
        if op < 0.55 or not live:
            ks = [random_spec(rng, kd) for kd in keys]
            p = rng.randint(1, 4) if prio else 0
            try:
                e = t.insert(ks, "set", [step], p)
            except EntryExistsError:
                continue
            order += 1
            live[e.handle] = Ref(ks, p, order)
        elif op < 0.9:
            h = rng.choice(list(live))
            ref = live.pop(h)
            t.delete(ref.keys, ref.priority)
        else:
            h = rng.choice(list(live))
            t.modify(live[h].keys, "set", [step], live[h].priority)
        if step % 10 == 0:
            check()
    check()
    for ref in list(live.values()):
        t.delete(ref.keys, ref.priority)
    live.clear()
    check()
    assert not t._sorted and not t._order and not t._lpm and not t._lpm_by_len


def test_clear_rebuilds_and_inserts_continue() -> None:
    keys = [KeyDef("t", "ternary", 8)]
    t = Table("Ing.t", keys, [ActionInfo("set", _fn, (("v", 8),), 0)], ("set", (0,)))
    for i in range(20):
        t.insert([KeySpec(i, mask=0xFF)], "set", [i], priority=1 + i % 3)
    t.clear()
    assert t.lookup(3)[3] is False
    a = t.insert([KeySpec(0, mask=0)], "set", [1], priority=2)
    b = t.insert([KeySpec(3, mask=0xFF)], "set", [2], priority=2)
    assert t.lookup(3)[4] is a  # same priority: the earlier entry wins
    t.delete([KeySpec(0, mask=0)], priority=2)
    assert t.lookup(3)[4] is b
