"""innet.controller.schema and .entities: names, values, match kinds, read-back; against
the in-process P4Runtime server with innet's executor (port 0, hermetic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.controller.entities import Lpm, Optional, Range, Ternary, TableEntry, table_entry_proto
from innet.controller.errors import SchemaError, UnknownNameError, ValueRangeError, WriteError
from innet.controller.pipeline import PipelineConfig
from innet.controller.schema import P4Schema, encode, parse_value, to_signed
from innet.controller.switch import Switch, SwitchEndpoint
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.server import SwitchOptions, SwitchServer

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> _pad; }
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
struct headers { packet_out_t packet_out; ethernet_t ethernet; }
struct metadata { }
parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { packet.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    register<bit<16>>(32) cells;
    counter(4, CounterType.packets) hits;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table exact_lpm {
        key = { hdr.ethernet.etherType: exact; hdr.ethernet.dst: lpm; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    table mixed {
        key = { hdr.ethernet.src: ternary; hdr.ethernet.etherType: range; sm.ingress_port: optional; }
        actions = { fwd; drop; }
    }
    apply { hits.count(0); exact_lpm.apply(); mixed.apply(); }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out packet, in headers hdr) { apply { packet.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> PipelineConfig:
    path = tmp_path_factory.mktemp("kinds") / "kinds.p4"
    path.write_text(PROGRAM)
    return PipelineConfig.from_p4(path)


@pytest.fixture
def switch(config):
    with SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), InnetTarget()) as server:
        with Switch(SwitchEndpoint("s1", server.grpc_address, timeout=5)) as sw:
            sw.push(config)
            yield sw


def test_parse_value_notations():
    assert parse_value("10.0.0.1", "x") == 0x0A000001
    assert parse_value("00:00:00:00:01:0a", "x") == 0x10A
    assert parse_value("0x1f", "x") == 31
    assert parse_value(" 42 ", "x") == 42
    with pytest.raises(ValueRangeError, match=r"x: cannot read 'ten'"):
        parse_value("ten", "x")


def test_encode_canonical_signed_and_width():
    assert encode(0, 9, "p") == b"\x00"
    assert encode(256, 9, "p") == b"\x01\x00"
    assert encode(-1, 32, "lr") == b"\xff\xff\xff\xff"
    assert to_signed(0xFFFFFFFF, 32) == -1
    with pytest.raises(ValueRangeError, match=r"port: value 512 does not fit 9 bits \(maximum 511\)"):
        encode(512, 9, "port")
    with pytest.raises(ValueRangeError, match="does not fit a signed 8-bit field"):
        encode(-129, 8, "s")


def test_names_full_short_and_suggestions(config):
    schema = P4Schema(config.p4info)
    assert schema.table("exact_lpm").name == "I.exact_lpm"
    assert schema.register("I.cells").size == 32 and schema.register("cells").bitwidth == 16
    with pytest.raises(UnknownNameError, match=r"no table named 'exact_lmp'.*Did you mean 'I.exact_lpm'\?"):
        schema.table("exact_lmp")
    with pytest.raises(UnknownNameError, match=r"no register named 'cels'.*Did you mean 'I.cells'"):
        schema.register("cels")
    with pytest.raises(UnknownNameError, match=r"no action named 'fw'.*Did you mean 'I.fwd'"):
        schema.action("fw")
    with pytest.raises(UnknownNameError, match=r"no parameter named 'prot' in action 'I.fwd'. Did you mean 'port'"):
        table_entry_proto(schema, TableEntry("exact_lpm", {"etherType": 1, "dst": "0.0.0.0/0"}, "fwd", {"prot": 1}))


def test_entry_checks(config):
    schema = P4Schema(config.p4info)
    with pytest.raises(ValueRangeError, match=r"table 'I.mixed' has ternary/range/optional keys: priority must be > 0"):
        table_entry_proto(schema, TableEntry("mixed", {"src": Ternary(1, 0xFF)}, "drop"))
    with pytest.raises(ValueRangeError, match="priority must be 0, got 3"):
        table_entry_proto(schema, TableEntry("exact_lpm", {"etherType": 1}, "drop", priority=3))
    with pytest.raises(SchemaError, match=r"missing parameter\(s\) 'port'"):
        table_entry_proto(schema, TableEntry("exact_lpm", {"etherType": 1}, "fwd"))
    with pytest.raises(ValueRangeError, match=r"field 'hdr.ethernet.etherType': range low 9 is above high 2"):
        table_entry_proto(schema, TableEntry("mixed", {"etherType": Range(9, 2)}, "drop", priority=1))
    proto = table_entry_proto(schema, TableEntry("exact_lpm", {"etherType": 0x800, "dst": "00:00:00:00:01:ff/40"},
                                                 "fwd", {"port": 3}))
    assert proto.match[1].lpm.value == (0x100).to_bytes(2, "big") and proto.match[1].lpm.prefix_len == 40


def test_values_are_masked_and_dont_cares_omitted(config):
    schema = P4Schema(config.p4info)
    lpm = table_entry_proto(schema, TableEntry("exact_lpm", {"etherType": 0x800, "dst": Lpm("00:00:00:00:01:05", 40)},
                                               "drop"))
    assert lpm.match[1].lpm.value == b"\x01\x00"  # host bits cleared, canonical (no leading zeros)
    assert [m.field_id for m in table_entry_proto(
        schema, TableEntry("exact_lpm", {"etherType": 0x800, "dst": Lpm(5, 0)}, "drop")).match] == [1]
    ternary = table_entry_proto(schema, TableEntry("mixed", {"src": Ternary(0x1234, 0xFF00)}, "drop", priority=1))
    assert (ternary.match[0].ternary.value, ternary.match[0].ternary.mask) == (b"\x12\x00", b"\xff\x00")
    mixed = table_entry_proto(schema, TableEntry("mixed", {"src": Ternary(0x1234, 0), "etherType": Range(0, 0xFFFF),
                                                           "ingress_port": Optional(3)}, "drop", priority=1))
    assert [m.WhichOneof("field_match_type") for m in mixed.match] == ["optional"]
    assert mixed.match[0].optional.value == b"\x03"
    with pytest.raises(ValueRangeError, match=r"field 'hdr.ethernet.etherType': value 65536 does not fit 16 bits"):
        table_entry_proto(schema, TableEntry("mixed", {"etherType": Range(1, 0x10000)}, "drop", priority=1))


def test_every_match_kind_round_trips_through_the_switch(switch):
    lpm = TableEntry("exact_lpm", {"etherType": 0x800, "dst": Lpm("00:00:00:00:01:00", 40)}, "fwd", {"port": 2})
    mixed = TableEntry("mixed", {"src": Ternary("00:00:00:00:00:0f", "00:00:00:00:00:ff"),
                                 "etherType": Range(0x800, 0x8FF), "ingress_port": Optional(3)}, "fwd",
                       {"port": 1}, priority=10)
    switch.insert([lpm, mixed])
    (got_lpm,) = switch.read_table("exact_lpm")
    assert got_lpm.match == {"hdr.ethernet.etherType": 0x800, "hdr.ethernet.dst": Lpm(0x100, 40)}
    assert got_lpm.action == "I.fwd" and got_lpm.params == {"port": 2}
    (got_mixed,) = switch.read_table("mixed")
    assert got_mixed.match == {"hdr.ethernet.src": Ternary(0x0F, 0xFF), "hdr.ethernet.etherType": Range(0x800, 0x8FF),
                               "sm.ingress_port": Optional(3)}
    assert got_mixed.priority == 10
    switch.modify([TableEntry("exact_lpm", lpm.match, "drop")])
    assert switch.read_table("exact_lpm")[0].action == "I.drop"
    switch.delete([lpm])
    assert switch.read_table("exact_lpm") == []
    switch.set_default("exact_lpm", "fwd", {"port": 7})


def test_batch_write_error_names_update_index_and_object(switch):
    entries = [TableEntry("exact_lpm", {"etherType": i}, "drop") for i in range(3)]
    switch.insert(entries[:2])
    with pytest.raises(WriteError) as info:
        switch.insert([entries[2], entries[0], entries[1]])
    error = info.value
    assert [(f.index, f.code.name) for f in error.failures] == [(1, "ALREADY_EXISTS"), (2, "ALREADY_EXISTS")]
    assert "INSERT table 'I.exact_lpm'" in str(error) and str(error).startswith("2 of 3 updates failed")


def test_registers_counters_and_multicast(switch):
    from innet.controller.entities import Replica

    switch.write_register("cells", 4, [1, 2, 0xFFFF])
    assert switch.read_register("cells", range(3, 8)) == [0, 1, 2, 0xFFFF, 0]
    assert len(switch.read_register("cells")) == 32
    with pytest.raises(ValueRangeError, match=r"register 'I.cells': index 32 is outside 0..31"):
        switch.read_register("cells", range(30, 33))
    with pytest.raises(ValueRangeError, match=r"value 65536 does not fit 16 bits"):
        switch.write_register("cells", 0, [65536])
    assert switch.read_counter("hits") == {i: (0, 0) for i in range(4)}
    switch.set_multicast_group(5, [Replica(1, 0), Replica(2, 1)])
    switch.set_multicast_group(5, [Replica(3, 0)])  # replaced, not duplicated
    assert switch.read_multicast_groups() == {5: [Replica(3, 0)]}
    switch.delete_multicast_group(5)
    assert switch.read_multicast_groups() == {}


def test_packet_out_metadata_names(switch):
    with pytest.raises(UnknownNameError, match="no packet_out metadata field named 'egress'.*egress_port"):
        switch.packet_out(b"x" * 20, egress=1)
    switch.packet_out(b"\x00" * 20, egress_port=1)  # no CPU port configured: accepted, dropped
