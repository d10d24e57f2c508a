"""Ids and aliases of innet.switch.p4info.ids against values p4c publishes.

Expected ids come from P4Info files p4c generated for p4lang/tutorials' basic exercise
and p4c's testdata (flowlet_switching-bmv2, default-action-arg-bmv2,
action_profile_max_group_size_annotation): ids depend only on names, so they are an
oracle for ours.
"""

from __future__ import annotations

import pytest

from innet.switch.p4info.ids import (
    IdError,
    Prefix,
    SuffixSet,
    SymbolTable,
    hashed_id,
    jenkins_one_at_a_time,
    make_id,
)


def reference_hash(data: bytes) -> int:
    """Straight transcription of the algorithm in docs/design.md, "P4Info ids" (independent of ids.py)."""
    h = 0
    for b in data:
        h = (h + b) % 2**32
        h = (h + (h << 10)) % 2**32
        h = h ^ (h >> 6)
    h = (h + (h << 3)) % 2**32
    h = h ^ (h >> 11)
    h = (h + (h << 15)) % 2**32
    return h


@pytest.mark.parametrize(
    "prefix,name,expected",
    [
        (Prefix.ACTION, "NoAction", 21257015),
        (Prefix.REGISTER, "ingress.flowlet_id", 384519412),
        (Prefix.CONTROLLER_HEADER, "packet_out_header_t", 76689799),
        (Prefix.TABLE, "MyIngress.ipv4_lpm", 37375156),
        (Prefix.ACTION, "MyIngress.drop", 25652968),
        (Prefix.ACTION, "MyIngress.ipv4_forward", 28792405),
        (Prefix.TABLE, "ingress.ecmp_group", 38446407),
        (Prefix.REGISTER, "ingress.flowlet_lasttime", 375147533),
        (Prefix.ACTION, "ingress._drop", 19344232),
        (Prefix.ACTION, "egress._drop", 25850727),
        (Prefix.ACTION_PROFILE, "ap_ws", 300324846),
        (Prefix.ACTION_PROFILE, "ap", 294074782),
        (Prefix.TABLE, "ingress.c.t", 43577110),
        (Prefix.ACTION, "ingress.c.add", 29022044),
    ],
)
def test_hashed_ids_match_p4c_output(prefix: Prefix, name: str, expected: int) -> None:
    assert hashed_id(prefix, name) == expected


@pytest.mark.parametrize("name", ["", "a", "MyIngress.t", "x" * 300, "ünïcode.name"])
def test_hash_matches_reference_transcription(name: str) -> None:
    assert jenkins_one_at_a_time(name) == reference_hash(name.encode())


def test_hash_of_empty_string_is_zero() -> None:
    assert jenkins_one_at_a_time(b"") == 0


def test_id_layout_is_prefix_and_low_24_bits() -> None:
    h = jenkins_one_at_a_time("MyIngress.ipv4_lpm")
    assert hashed_id(Prefix.TABLE, "MyIngress.ipv4_lpm") == (0x02 << 24) | (h & 0xFFFFFF)
    assert hashed_id(Prefix.TABLE, "MyIngress.ipv4_lpm") >> 24 == 0x02


def colliding_names(prefix: Prefix, count: int) -> list[str]:
    """Names whose 24-bit hashes collide (found by brute force over short names)."""
    seen: dict[int, list[str]] = {}
    i = 0
    while True:
        name = f"n{i}"
        bucket = seen.setdefault(jenkins_one_at_a_time(name) & 0xFFFFFF, [])
        bucket.append(name)
        if len(bucket) == count:
            return bucket
        i += 1


def test_collisions_probe_linearly_in_sorted_name_order() -> None:
    a, b = sorted(colliding_names(Prefix.ACTION, 2))
    table = SymbolTable()
    table.add(Prefix.ACTION, b)
    table.add(Prefix.ACTION, a)
    table.compute_ids()
    assert table.id_of(Prefix.ACTION, a) == hashed_id(Prefix.ACTION, a)
    assert table.id_of(Prefix.ACTION, b) == make_id(Prefix.ACTION, jenkins_one_at_a_time(b) + 1)


def test_user_ids_are_reserved_first_and_get_the_type_prefix() -> None:
    table = SymbolTable()
    taken = hashed_id(Prefix.TABLE, "c.t")
    table.add(Prefix.TABLE, "c.t")
    table.add(Prefix.TABLE, "c.u", user_id=taken & 0xFFFFFF)  # no prefix: p4c adds it
    table.add(Prefix.ACTION, "c.a", user_id=0x01000005)
    table.compute_ids()
    assert table.id_of(Prefix.TABLE, "c.u") == taken
    assert table.id_of(Prefix.TABLE, "c.t") == make_id(Prefix.TABLE, jenkins_one_at_a_time("c.t") + 1)
    assert table.id_of(Prefix.ACTION, "c.a") == 0x01000005


def test_user_id_with_wrong_prefix_is_rejected() -> None:
    table = SymbolTable()
    with pytest.raises(IdError, match=r"@id 0x2000001 of 'c.a' has the wrong 8-bit prefix for a action"):
        table.add(Prefix.ACTION, "c.a", user_id=0x02000001)


def test_duplicate_user_id_is_rejected() -> None:
    table = SymbolTable()
    table.add(Prefix.ACTION, "c.a", user_id=7)
    with pytest.raises(IdError, match="assigned to multiple declarations"):
        table.add(Prefix.ACTION, "c.b", user_id=7)


def test_duplicate_names_of_one_type_are_one_symbol() -> None:
    table = SymbolTable()
    table.add(Prefix.ACTION, "NoAction")
    table.add(Prefix.ACTION, "NoAction")
    table.compute_ids()
    assert table.names(Prefix.ACTION) == ["NoAction"]
    assert table.alias_of("NoAction") == "NoAction"


def test_ids_unreadable_before_compute() -> None:
    table = SymbolTable()
    table.add(Prefix.ACTION, "a")
    with pytest.raises(RuntimeError, match="compute_ids"):
        table.id_of(Prefix.ACTION, "a")


def test_unknown_symbol_is_named() -> None:
    table = SymbolTable()
    table.compute_ids()
    with pytest.raises(KeyError, match="no table named 'MyIngress.nope'"):
        table.id_of(Prefix.TABLE, "MyIngress.nope")


def test_alias_is_shortest_unique_suffix_across_all_types() -> None:
    s = SuffixSet()
    for name in ["ingress._drop", "egress._drop", "ingress.flowlet", "NoAction", "d.a.c", "e.b.c", "x.y", "y"]:
        s.add(name)
    assert s.shortest_unique_suffix("ingress._drop") == "ingress._drop"
    assert s.shortest_unique_suffix("egress._drop") == "egress._drop"
    assert s.shortest_unique_suffix("ingress.flowlet") == "flowlet"
    assert s.shortest_unique_suffix("NoAction") == "NoAction"
    assert s.shortest_unique_suffix("d.a.c") == "a.c"
    assert s.shortest_unique_suffix("e.b.c") == "b.c"
    # a name that is a suffix of another keeps all its components
    assert s.shortest_unique_suffix("y") == "y"
    assert s.shortest_unique_suffix("x.y") == "x.y"


def test_alias_considers_symbols_of_other_types() -> None:
    table = SymbolTable()
    table.add(Prefix.TABLE, "MyIngress.t")
    table.add(Prefix.REGISTER, "MyEgress.t")
    table.compute_ids()
    assert table.alias_of("MyIngress.t") == "MyIngress.t"
