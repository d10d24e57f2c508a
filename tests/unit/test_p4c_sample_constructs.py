"""Constructs that the last eight failing p4c samples needed, checked on innet's own small
programs (the STF programs under tests/conformance pin their packet behaviour): what is
not an STF expectation -- an out-of-range stack index in a control (BMv2 aborts on it,
so no STF file can pin it), the front-end's names, warnings and errors, and P4Info."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.native_build import compiler_path
from innet.switch.frontend import P4Error, compile_file, compile_source, ir
from innet.switch.pipeline import Pipeline

REPO = Path(__file__).resolve().parents[2]

HEAD = """#include <core.p4>
#include <v1model.p4>
"""
TAIL = """
control VC(inout headers_t h, inout meta_t m) { apply { } }
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

OOB = HEAD + """
header i_t { bit<8> idx; bit<8> seen; }
header e_t { bit<8> v; }
struct headers_t { i_t i; e_t[2] s; }
struct meta_t { }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.i); pkt.extract(h.s.next); pkt.extract(h.s.next); transition accept; }
}
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action touch(inout bit<8> x) { }
    action set(inout bit<8> x) { x = 0x55; }
    apply {
        touch(h.s[h.i.idx].v);
        h.s[h.i.idx].v = 0xaa;
        set(h.s[h.i.idx + 1].v);
        if (!h.s[h.i.idx].isValid()) { h.i.seen = 1; }
        sm.egress_spec = 1;
    }
}
""" + TAIL


def _executors() -> list[str]:
    return ["python"] + (["native"] if compiler_path() is not None else [])


def _pipeline(program: ir.Program, executor: str) -> Pipeline:
    if executor == "native":
        from innet.switch.native.pipeline import NativePipeline

        return NativePipeline(program)
    return Pipeline(program)


@pytest.mark.parametrize("executor", _executors())
def test_stack_index_out_of_range_in_a_control_changes_nothing(executor: str) -> None:
    """P4_16 8.18: a write through an out-of-range index has no effect and a read gives an
    unspecified value (here: an invalid header); the packet goes on (p4c's
    HSIndexSimplifier drops such accesses; BMv2 would abort)."""
    pl = _pipeline(compile_source(OOB, "oob.p4"), executor)
    # in range: s[0] = 0xaa, set() writes s[1]
    assert pl.process(0, bytes([0, 0, 1, 2])) == [(1, bytes([0, 0, 0xaa, 0x55]))]
    # idx 1: s[1] = 0xaa, set(s[2]) is out of range
    assert pl.process(0, bytes([1, 0, 1, 2])) == [(1, bytes([1, 0, 1, 0xaa]))]
    # idx 3 and 254: nothing changes, isValid() of the missing element is false
    assert pl.process(0, bytes([3, 0, 1, 2])) == [(1, bytes([3, 1, 1, 2]))]
    assert pl.process(0, bytes([254, 0, 1, 2])) == [(1, bytes([254, 1, 1, 2]))]
    # idx 255: idx + 1 wraps to 0 (bit<8>), so set() writes s[0]
    assert pl.process(0, bytes([255, 0, 1, 2])) == [(1, bytes([255, 1, 0x55, 2]))]


def test_header_with_a_struct_field_is_flattened_like_p4c() -> None:
    src = HEAD + """
struct inner_t { bit<4> x; bit<4> y; }
struct row_t { bit<8> e; inner_t n; }
header hdr_t { bit<8> pre; row_t row; }
struct headers_t { hdr_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply { h.h.row.n.y = h.h.row.n.x; } }
""" + TAIL
    prog = compile_source(src, "flat.p4")
    ht = prog.types["hdr_t"]
    assert isinstance(ht, ir.HeaderT)
    assert [f.name for f in ht.fields] == ["pre", "_row_e1", "_row_n_x2", "_row_n_y3"]
    assert [f.name for f in ht.source_fields] == ["pre", "row"]
    assert ht.width == 24 and ht.group("row") == (1, prog.types["row_t"])
    pl = Pipeline(prog)
    assert pl.process(0, bytes([1, 2, 0x3c])) == [(0, bytes([1, 2, 0x33]))]


def test_header_struct_field_must_be_fixed_width() -> None:
    src = HEAD + """
struct v_t { varbit<8> v; }
header hdr_t { v_t row; }
"""
    with pytest.raises(P4Error, match=r"v\.p4:5:16: error: field 'row' of header hdr_t has type v_t; "
                                      r"header fields must be .*a struct of such fields"):
        compile_source(src, "v.p4")


def test_direct_apply_and_control_argument_names_in_p4info() -> None:
    """Wrap.apply() is an instance named Wrap (p4c's InstantiateDirectCalls); the Count
    instance passed to Twice and Once is one instance with one register."""
    from innet.switch.p4info import build_p4info

    info = build_p4info(compile_file(str(REPO / "tests/conformance/controls/direct_apply.p4")))
    assert [t.preamble.name for t in info.tables] == ["I.Wrap.t"]
    assert [r.preamble.name for r in info.registers] == ["I.Wrap.shared.r"]


def test_control_argument_must_match_the_parameter_type() -> None:
    src = HEAD + """
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }
control ct(inout bit<8> n);
control Two(inout bit<8> n, in bit<8> k) { apply { } }
control Use(inout bit<8> n)(ct c) { apply { c.apply(n); } }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    Two() two;
    Use(two) u;
    apply { u.apply(h.h.a); } }
""" + TAIL
    with pytest.raises(P4Error, match=r"constructor argument 'c' of Use: two \(Two\) does not match "
                                      r"ct\(inout bit<8>\)"):
        compile_source(src, "ctor.p4")


@pytest.mark.parametrize("body,message", [
    ("break;", "'break' outside a for loop"),
    ("if (true) { continue; }", "'continue' outside a for loop"),
    ("for (bool b in 0 .. 1) { }", "the variable of a range loop must be bit<W> or int<W>, not bool"),
    ("for (bit<8> i = 0; i; i = i + 1) { }", "for loop condition must be bool, not bit<8>"),
    ("for (bit<8> i = 0; i < 3; bit<8> j = 0) { }",
     "a variable declaration is only allowed in a for loop's initializer"),
])
def test_loop_errors(body: str, message: str) -> None:
    src = HEAD + """
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply { """ + body + """ } }
""" + TAIL
    with pytest.raises(P4Error, match=message):
        compile_source(src, "loop.p4")


def test_loop_variable_is_local_to_the_loop() -> None:
    src = HEAD + """
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply { for (bit<8> i = 0; i < 3; i = i + 1) { } h.h.a = i; } }
""" + TAIL
    with pytest.raises(P4Error, match=r"loop\.p4:10:62: error: undefined name 'i'"):
        compile_source(src, "loop.p4")


def test_digest_of_a_negative_int_member_encodes_its_twos_complement() -> None:
    """Both executors give an int<W> digest field as its value; P4Runtime carries the
    W-bit pattern (p4c/PI: a bitstring of the member's width)."""
    from finsy.proto import p4r

    from innet.switch.p4info import build_p4info
    from innet.switch.p4runtime.externs import ExternState
    from innet.switch.p4runtime.schema import Schema
    from innet.switch.p4runtime.target_api import Digest

    src = HEAD + """
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }
struct d_t { int<12> s; bit<8> u; }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply { digest<d_t>(1, { (int<12>)-3, h.h.a }); } }
""" + TAIL
    prog = compile_source(src, "dig.p4")
    pl = Pipeline(prog)
    pl.process(0, b"\x07")
    assert [(d.name, d.fields) for d in pl.pop_digests()] == [("d_t", {"s": -3, "u": 7})]
    schema = Schema.build(build_p4info(prog))
    ext = ExternState(schema, None, None)  # type: ignore[arg-type]
    did = next(iter(schema.digests))
    ext.digest_configs[did] = p4r.DigestEntry.Config()
    _, data = ext.digest_data(Digest("d_t", (-3, 7)))  # type: ignore[misc]
    assert [m.bitstring for m in data.struct.members] == [b"\x0f\xfd", b"\x07"]
