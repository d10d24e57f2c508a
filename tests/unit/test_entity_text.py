"""simple_switch_CLI words to table entries and back, over a P4Info: every match kind,
keys and parameters by position or by name, wildcards, and the error of each misuse."""

from __future__ import annotations

import pytest

from innet.controller import entities as ent
from innet.controller.entities import Exact, Lpm, Optional, Range, TableEntry, Ternary
from innet.controller.entity_text import format_entry, parse_entry, show_value
from innet.controller.errors import SchemaError, UnknownNameError
from innet.controller.schema import P4Schema
from testkit.fake_target import sample_p4info


@pytest.fixture(scope="module")
def schema() -> P4Schema:
    return P4Schema(sample_p4info())


def test_words_in_key_order_and_after_the_arrow(schema):
    entry = parse_entry(schema, "ipv4_lpm", ["0x800", "10.0.1.0/24"], "forward", ["3", "00:00:00:00:01:01"])
    assert entry == TableEntry("MyIngress.ipv4_lpm", {"hdr.ethernet.etherType": Exact("0x800"),
                                                       "hdr.ipv4.dstAddr": Lpm("10.0.1.0", 24)},
                               "MyIngress.forward", {"port": "3", "mac": "00:00:00:00:01:01"})
    ent.insert(schema, entry)  # the values fit their fields
    assert format_entry(entry, schema) == ("MyIngress.ipv4_lpm etherType=0x800 dstAddr=10.0.1.0/24 => "
                                           "MyIngress.forward(port=3, mac=00:00:00:00:01:01)")


def test_words_by_name_leave_other_fields_wildcards(schema):
    entry = parse_entry(schema, "ipv4_lpm", ["dstAddr=10.0.0.1"], "forward", ["mac=00:00:00:00:00:02", "port=1"])
    assert entry.match == {"hdr.ipv4.dstAddr": Lpm("10.0.0.1", 32)}  # no /LEN: the whole address
    assert entry.params == {"mac": "00:00:00:00:00:02", "port": "1"}


def test_ternary_range_optional(schema):
    entry = parse_entry(schema, "acl", ["10.0.0.0&&&255.0.0.0", "1000->2000", "1"], "drop", priority=5)
    assert entry.match == {"hdr.ipv4.srcAddr": Ternary("10.0.0.0", "255.0.0.0"),
                           "hdr.udp.dstPort": Range("1000", "2000"), "meta.flag": Optional("1")}
    update = ent.insert(schema, entry)
    assert update.entity.table_entry.priority == 5
    read = ent.table_entry_from_proto(schema, update.entity.table_entry)
    assert format_entry(read, schema) == ("MyIngress.acl srcAddr=10.0.0.0&&&255.0.0.0 dstPort=1000->2000 flag=1 "
                                          "priority 5 => MyIngress.drop()")
    assert parse_entry(schema, "acl", ["10.0.0.1"], "drop").match == {
        "hdr.ipv4.srcAddr": Ternary("10.0.0.1", (1 << 32) - 1)}  # no mask: every bit


def test_misuse_is_one_clear_error(schema):
    with pytest.raises(UnknownNameError, match=r"no table named 'ipv4_lmp'.*Did you mean 'MyIngress.ipv4_lpm'"):
        parse_entry(schema, "ipv4_lmp", [], "forward")
    with pytest.raises(SchemaError, match=r"table 'MyIngress.ipv4_lpm' key: 3 values for 2 \(hdr.ethernet.etherType, "
                                          r"hdr.ipv4.dstAddr\): '7' is one too many"):
        parse_entry(schema, "ipv4_lpm", ["1", "10.0.0.1", "7"])
    with pytest.raises(SchemaError, match=r"a range field takes LOW->HIGH, not '80'"):
        parse_entry(schema, "acl", ["10.0.0.1", "80"], "drop")
    with pytest.raises(SchemaError, match=r"prefix length 'x' of '10.0.0.0/x' is not a number"):
        parse_entry(schema, "ipv4_lpm", ["1", "10.0.0.0/x"])
    with pytest.raises(SchemaError, match=r"action parameters '1 2' given without an action"):
        parse_entry(schema, "ipv4_lpm", [], "", ["1", "2"])


def test_values_shown_as_written():
    assert show_value(0x000000000102, 48) == "00:00:00:00:01:02"
    assert show_value(0x0A000001, 32, "dstAddr") == "10.0.0.1"
    assert show_value(0x0A000001, 32, "count") == "167772161"
    assert show_value("x") == "x"
