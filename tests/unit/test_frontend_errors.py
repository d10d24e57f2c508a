"""Every error class of the front-end: message text and exact file:line:col."""

from __future__ import annotations

import pytest

from innet.switch.frontend import P4Error, UnsupportedError, compile_source, ir

HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> c; }
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
"""  # 8 lines; the ingress control starts on line 9
ING = "control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {\n"
TAIL = """
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Egr(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
"""


def ingress_src(locals_: str, body: str) -> str:
    # line 9: control header, line 10: locals, line 11: apply {, line 12: body
    return HEAD + ING + locals_ + "\n    apply {\n" + body + "\n    }\n}\n" + TAIL


def compile_err(locals_: str, body: str) -> P4Error:
    with pytest.raises(P4Error) as ei:
        compile_source(ingress_src(locals_, body), "err.p4")
    return ei.value


def test_error_format_has_source_line_and_caret() -> None:
    e = compile_err("", "        m.y = 1;")
    text = str(e)
    lines = text.splitlines()
    assert lines[0] == "err.p4:12:9: error: meta_t has no field 'y'."
    assert lines[1] == "        m.y = 1;"
    assert lines[2] == "        ^"
    assert e.loc.file == "err.p4" and (e.loc.line, e.loc.col) == (12, 9)


def test_undefined_name_did_you_mean() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:15: error: undefined name 'hdrr'\. "
                                      r"Did you mean 'hdr'\?"):
        compile_source(ingress_src("", "        m.x = hdrr.h.a;"), "err.p4")


def test_unknown_field_did_you_mean() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:15: error: h_t has no field 'aa'\. "
                                      r"Did you mean 'a'\?"):
        compile_source(ingress_src("", "        m.x = hdr.h.aa;"), "err.p4")


def test_unknown_type() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:10:5: error: unknown type 'meta_tt'\. "
                                      r"Did you mean 'meta_t'\?"):
        compile_source(ingress_src("    meta_tt q;", "")
                       , "err.p4")


def test_width_mismatch_needs_cast() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:15: error: assignment: cannot convert "
                                      r"bit<16> to bit<8> implicitly; use a cast"):
        compile_source(ingress_src("", "        m.x = hdr.h.c;"), "err.p4")


def test_int_literal_too_wide_warns_and_wraps(caplog: pytest.LogCaptureFixture) -> None:
    """p4c: a warning (overflow), not an error, and the value wraps to the width."""
    with caplog.at_level("WARNING", logger="innet.switch.frontend"):
        prog = compile_source(ingress_src("", "        m.x = 257;"), "err.p4")
    assert [r.getMessage() for r in caplog.records] == [
        "err.p4:12:15: warning: assignment: value 257 does not fit in bit<8>; it wraps to 1"]
    ing = prog.main.args[2].decl  # type: ignore[union-attr]
    assign = ing.body.stmts[0]  # type: ignore[union-attr]
    assert assign.rhs.value == 1


def test_binary_operands_differ() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:15: error: operands of '\+' have different "
                                      r"types: bit<8> and bit<16>"):
        compile_source(ingress_src("", "        m.x = hdr.h.a + hdr.h.c;"), "err.p4")


def test_bool_vs_bit1_condition() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:13: error: if condition must be bool, "
                                      r"not bit<1>"):
        compile_source(ingress_src("", "        if (sm.checksum_error) { m.x = 1; }"), "err.p4")


def test_assign_to_const() -> None:
    src = ingress_src("    const bit<8> K = 3;", "        K = 4;")
    with pytest.raises(P4Error, match=r"err\.p4:12:9: error: cannot assign to constant 'K'"):
        compile_source(src, "err.p4")


def test_assign_to_in_param() -> None:
    src = HEAD + ING + "    action a(in bit<8> v) { v = 1; }\n    apply { a(m.x); }\n}\n" + TAIL
    with pytest.raises(P4Error, match=r"err\.p4:10:29: error: cannot assign to 'v': it is an "
                                      r"'in' parameter"):
        compile_source(src, "err.p4")


def test_assign_to_action_data_param() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:10:26: error: cannot assign to 'v': it is a "
                                      r"directionless parameter"):
        compile_source(ingress_src("    action a(bit<8> v) { v = 1; }", ""), "err.p4")


def test_assign_to_literal() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:9: error: cannot assign to a literal"):
        compile_source(ingress_src("", "        5 = m.x;"), "err.p4")


def test_wrong_argument_count() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:9: error: wrong number of arguments for "
                                      r"action 'a': missing argument for parameter 'v'"):
        compile_source(ingress_src("    action a(bit<8> v) { m.x = v; }", "        a();"),
                       "err.p4")


def test_too_many_arguments_extern() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:9: error: wrong number of arguments for "
                                      r"'clone': expected 2, got 3"):
        compile_source(ingress_src("", "        clone(CloneType.I2E, 1, 2);"), "err.p4")


def test_unknown_method() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:9: error: extern register has no method "
                                      r"'reed'\. Did you mean 'read'\?"):
        compile_source(ingress_src("    register<bit<8>>(4) r;", "        r.reed(m.x, 0);"),
                       "err.p4")


def test_out_argument_must_be_lvalue() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:16: error: argument for 'out' parameter "
                                      r"'result' of register\.read must be a writable l-value"):
        compile_source(ingress_src("    register<bit<8>>(4) r;", "        r.read(8w3, 0);"),
                       "err.p4")


def test_duplicate_declaration() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:10:22: error: duplicate declaration of 'q' "
                                      r"\(previous declaration at err\.p4:10:12\)"):
        compile_source(ingress_src("    bit<8> q; bit<8> q;", ""), "err.p4")


def test_duplicate_type() -> None:
    src = HEAD.replace("struct meta_t { bit<8> x; }",
                       "struct meta_t { bit<8> x; }\nheader h_t { bit<8> z; }")
    with pytest.raises(P4Error, match=r"err\.p4:6:8: error: duplicate declaration of type "
                                      r"'h_t' \(previous declaration at err\.p4:3:8\)"):
        compile_source(src + ING + "apply {}\n}\n" + TAIL, "err.p4")


def test_undefined_state() -> None:
    src = HEAD.replace("transition accept;", "transition parse_x;") + ING + "apply {}\n}\n" + TAIL
    with pytest.raises(P4Error, match=r"err\.p4:7:50: error: transition to undefined state "
                                      r"'parse_x'"):
        compile_source(src, "err.p4")


def test_default_action_not_in_list() -> None:
    locs = ("    action a() {} action b() {}\n"
            "    table t { key = { m.x : exact; } actions = { a; } default_action = b(); }")
    with pytest.raises(P4Error, match=r"error: default action 'b' is not in the actions list "
                                      r"of table 't'"):
        compile_source(ingress_src(locs, ""), "err.p4")


def test_unknown_match_kind() -> None:
    locs = "    action a() {}\n    table t { key = { m.x : exakt; } actions = { a; } }"
    with pytest.raises(P4Error, match=r"err\.p4:11:29: error: unknown match kind 'exakt'\. "
                                      r"Did you mean 'exact'\?"):
        compile_source(ingress_src(locs, ""), "err.p4")


def test_syntax_error_located() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:20: error: syntax error: unexpected ';'"):
        compile_source(ingress_src("", "        m.x = m.x +;"), "err.p4")


def test_stack_index_out_of_range() -> None:
    src = HEAD.replace("struct headers_t { h_t h; }", "struct headers_t { h_t h; h_t[2] s; }")
    src += ING + "    apply {\n        hdr.s[2].a = 1;\n    }\n}\n" + TAIL
    with pytest.raises(P4Error, match=r"err\.p4:11:15: error: index 2 out of range for a "
                                      r"header stack of size 2"):
        compile_source(src, "err.p4")


def test_unsupported_value_set_is_located() -> None:
    src = HEAD.replace(
        "    state start",
        "    value_set<bit<8>>(4) vs;\n    state start") + ING + "apply {}\n}\n" + TAIL
    with pytest.raises(UnsupportedError, match=r"err\.p4:7:5: error: unsupported: value_set is "
                                               r"not supported by innet's embedded target"):
        compile_source(src, "err.p4")


def test_unsupported_non_const_entries() -> None:
    locs = ("    action a() {}\n"
            "    table t { key = { m.x : exact; } actions = { a; } entries = { 1 : a(); } }")
    with pytest.raises(UnsupportedError, match=r"err\.p4:11:55: error: unsupported: non-const "
                                               r"table 'entries'"):
        compile_source(ingress_src(locs, ""), "err.p4")


def test_unsized_hash_base_needs_width() -> None:
    with pytest.raises(P4Error, match=r"err\.p4:12:40: error: cannot infer a width for "
                                      r"argument 'base' of 'hash'"):
        compile_source(ingress_src("", "        hash(m.x, HashAlgorithm.crc16, 0, { m.x }, "
                                       "32w16);"), "err.p4")


def test_package_argument_kind_checked() -> None:
    src = HEAD + ING + "apply {}\n}\n" + TAIL.replace("V1Switch(P(), VC(),", "V1Switch(VC(), P(),")
    with pytest.raises(P4Error, match=r"package parameter 'p' expects a parser, but VC is a "
                                      r"control"):
        compile_source(src, "err.p4")


def test_directionless_function_parameter_takes_only_constants() -> None:
    # p4c: "argument used for directionless parameter 'v' must be a compile-time constant"
    src = ingress_src("", "        m.x = twice(hdr.h.a);").replace(
        ING, "bit<8> twice(bit<8> v) { return v + v; }\n" + ING)
    with pytest.raises(P4Error, match=r"err\.p4:13:21: error: argument for directionless parameter 'v' "
                                      r"of function 'twice' must be a compile-time constant"):
        compile_source(src, "err.p4")
    compile_source(src.replace("twice(hdr.h.a)", "twice(3)"), "ok.p4")  # a constant is fine
    # a direct action call binds a directionless parameter like 'in' (p4c allows it)
    compile_source(ingress_src("    action a(bit<8> v) { m.x = v; }", "        a(hdr.h.a);"), "ok.p4")


def test_const_entries_cannot_have_priorities() -> None:
    # p4c's EntryPriorities: "Table with 'const' entries cannot have priorities"
    locals_ = """    action set(bit<8> v) { m.x = v; }
    table t {
        key = { hdr.h.a : ternary; }
        actions = { set; }
        const entries = {
            8w1 &&& 8w1 : set(1);
            priority=3: 8w2 &&& 8w2 : set(2);
        }
    }"""
    with pytest.raises(P4Error, match=r"err\.p4:16:13: error: table 't': a table with 'const' entries "
                                      r"cannot have priorities"):
        compile_source(ingress_src(locals_, "        t.apply();"), "err.p4")


# ---------------------------------------------------------------------- p4c's error corpus
# Programs p4c rejects that once escaped the front-end as Python exceptions: each is now a
# located error (the corpus tier, tests/integration/test_p4c_error_corpus.py, runs them all).

def test_huge_int_shift_is_located() -> None:
    e = compile_err("", "        hdr.h.c = 1985245330 << 903012108;")
    assert e.loc.line == 12 and "shifted left by 903012108: int constants are limited to 2048 bits" in e.message


def test_int_arithmetic_wider_than_2048_bits_is_located() -> None:
    e = compile_err("", "        hdr.h.c = (1 << 2000) * (1 << 2000);")
    assert e.loc.line == 12 and "wider than 2048 bits" in e.message


@pytest.mark.parametrize("literal,what", [("1" * 5000, "integer literal of 5000 characters is too large"),
                                          ("0x" + "f" * 600, "integer literal of 2400 bits is too large"),
                                          ("100000w1", "width 100000 of literal is too large")])
def test_oversized_literal_is_located(literal: str, what: str) -> None:
    e = compile_err("", f"        hdr.h.c = {literal};")
    assert e.loc.line == 12 and what in e.message


def test_huge_width_is_located() -> None:
    e = compile_err("    bit<12301923123132> big;", "")
    assert e.loc.line == 10 and "width 12301923123132 is too large" in e.message


@pytest.mark.parametrize("bounds", ["1:-1", "0:1", "70000:0"])
def test_bad_slice_bounds_are_located(bounds: str) -> None:
    e = compile_err("", f"        m.x = (bit<8>)7[{bounds}];")
    assert e.loc.line == 12 and f"slice [{bounds}]" in e.message and "high bound first" in e.message


def test_control_that_instantiates_itself_is_located() -> None:
    src = ingress_src("", "").replace("control VC(", "control Self() {\n    Self() s;\n    apply { s.apply(); }\n}\n"
                                      "control VC(")
    with pytest.raises(P4Error, match=r"control Self instantiates itself \(Self -> Self\)") as ei:
        compile_source(src, "err.p4")
    assert ei.value.loc.col == 12


LPM_TABLE = """    action a(bit<8> v) { m.x = v; }
    table t { key = { hdr.h.a : lpm; } actions = { a; } const entries = { %s } }"""


def test_lpm_entry_mask_must_be_a_prefix() -> None:
    e = compile_err(LPM_TABLE % "0x11 &&& 0xF0 : a(1); 0x11 &&& 0xE1 : a(2);", "        t.apply();")
    assert e.loc.line == 11 and "invalid mask for LPM key 'hdr.h.a': 0xe1 is not a prefix of bit<8>" in e.message


def test_const_entries_with_the_same_key_are_located() -> None:
    e = compile_err(LPM_TABLE % "0x10 &&& 0xF0 : a(1);\n  0x1F &&& 0xF0 : a(2);", "        t.apply();")
    assert e.loc.line == 12 and "has the same key as the entry at line 11" in e.message


@pytest.mark.parametrize("body,what", [
    ("        m.x = m.x / 0;", "division by zero"),
    ("        m.x = m.x % 8w0;", "modulo by zero"),
    ("        m.x = m.x / -1;", "operator '/' is not defined on negative numbers (-1)"),
    ("        int<8> s = 1; s = s % s;", "operator '%' cannot operate on signed values (int<8>)"),
    ("        bit<32> w = (bit<32>)(int<8>)hdr.h.a;", "a cast may change the width or the signedness, not both"),
    ("        bool b = +true;", "operator '+' needs a numeric operand, not bool"),
])
def test_p4c_expression_rules(body: str, what: str) -> None:
    e = compile_err("", body)
    assert e.loc.line == 12 and what in e.message


def test_stack_last_only_in_a_parser() -> None:
    src = ingress_src("    h_t[2] st;", "        st.last.a = 1;")
    with pytest.raises(P4Error, match=r"err\.p4:12:9: error: 'last' of a header stack can only be used in a parser"):
        compile_source(src, "err.p4")


@pytest.mark.parametrize("locals_,body,what", [
    ("    table t { key = { hdr.h.a + 1 : exact; } actions = { NoAction; } }", "        t.apply();",
     "table 't': complex key expression 'hdr.h.a + 1' requires a @name annotation"),
    ("    table t { key = { hdr.h.a : exact; } }", "        t.apply();", "table 't' has no 'actions' property"),
    ("    table t { actions = { NoAction; } }\n    action a() { t.apply(); }", "        a();",
     "table 't'.apply() cannot be called from an action"),
])
def test_p4c_table_rules(locals_: str, body: str, what: str) -> None:
    assert what in compile_err(locals_, body).message


def test_named_complex_key_and_isvalid_key_are_fine() -> None:
    compile_source(ingress_src("    table t { key = { hdr.h.a + 1 : exact @name(\"k\"); hdr.h.isValid() : exact; "
                               "hdr.h.c[3:0] & 0xF : exact; } actions = { NoAction; } }", "        t.apply();"), "ok.p4")


def test_functions_and_parsers_cannot_call_actions() -> None:
    src = ingress_src("", "").replace(ING, "action a() { }\nvoid f() { a(); }\n" + ING)
    with pytest.raises(P4Error, match=r"err\.p4:10:12: error: action 'a' cannot be called from a function"):
        compile_source(src, "err.p4")


def test_table_default_needs_core_noaction() -> None:
    src = """control c() { action a() { } table t { actions = { a; } } apply { t.apply(); } }\n"""
    with pytest.raises(P4Error, match=r"table 't' has no default_action, so its default is NoAction, but no "
                                      r"action NoAction is declared \(did you include core\.p4\?\)"):
        compile_source(src, "err.p4")
    with pytest.raises(P4Error, match=r"but NoAction is not an action without parameters"):
        compile_source("action NoAction(bit<1> x) { }\n" + src, "err.p4")


@pytest.mark.parametrize("decl,what", [
    ("extern void f(out bit<32> x = 0);", "parameter 'x': out parameters cannot have default values"),
    ("extern void f(@optional bit<32> y = 0);", "parameter 'y': optional parameters cannot have default values"),
    ("extern E { E(); }\ncontrol q(in E e) { apply { } }", "parameter 'e': a parameter of extern type E cannot have a "
                                                           "direction"),
    ("control q(bit<8> p)(bool p) { apply { } }", "control q: constructor parameter 'p' duplicates an apply parameter"),
    ("control q() { action a(int x) { } apply { } }", "action 'a': parameter 'x' cannot have type int"),
    ("bit<8> h(in bit<8> a) { return a; }\nbit<8> g(in bit<8> a = h(1)) { return a; }",
     "default value of parameter 'a' must be a compile-time constant"),
    ("control A() { apply { } }\ncontrol B()(A a) { apply { } }", "parameter 'a' cannot have type control A"),
    ("package S<T, T>();", "duplicate type parameter 'T'"),
    ("extern X { X(bit<8> a); X(bit<8> b); }", "extern X: duplicate declaration of 'X' with 1 parameters"),
    ("extern X { void X(); }", "extern X: invalid constructor; a constructor cannot have a return type"),
    ("extern X { void m(X x); }", "extern X: self-referencing types are not supported"),
    ("extern X<T> { X(); }\nX<X<bit<8>>>() x;", "X: contains itself as a type argument"),
    ("extern X<T> { X(); }\ncontrol q(X x) { apply { } }", "parameter 'x': type parameters needed for extern X"),
    ("header hh { bit<8> a; }\ncontrol q() { hh<bit<8>> v; apply { } }", "type hh is not generic"),
    ("extern E { E(tuple<string> x); }", "a tuple element cannot have type string"),
    ("type tuple<bit<8>> Narrow;", "'type' can only be applied to base types"),
    ("control q() { apply { } }\nbool q() { return true; }", "re-declaration of 'q' with a different kind"),
    ("extern E { E(); }\nE() main;", "'main' must be an instance of a package"),
    ("extern main { }", "'main' must be an instance of a package, not a type name"),
    ("header hv { varbit<8> x; varbit<8> u; }", "header hv: multiple varbit fields in a header"),
    ("struct sm { @match(1+1) bit<8> f; }", "the value of @match must be a match_kind"),
    ("@name(4) void fn() { }", "@name should contain a single string literal, not '4'"),
    ("@dup[] @dup[] control q() { apply { } }", "@dup: duplicate name for structured annotation"),
    ("@n(3) @n[] const bit<1> b = 0;", "@n: duplicate name for structured annotation"),
    ("@bad[a = { 2, 3 }] control q() { apply { } }", "illegal value for a structured annotation"),
    ("enum bit<4> e { a = 1 }\ncontrol q(in e v) { apply { switch (v) { e.a: e.a: default: { } } } }",
     "duplicate case label 'a' in this switch"),
])
def test_p4c_declaration_rules(decl: str, what: str) -> None:
    """Checked in every declaration, also one that nothing instantiates (no ``main`` here)."""
    with pytest.raises(P4Error) as ei:
        compile_source("#include <core.p4>\n" + decl + "\n", "decl.p4")
    assert what in ei.value.message and ei.value.loc.file == "decl.p4" and ei.value.loc.line >= 2


@pytest.mark.parametrize("old,new,what", [
    ("pkt.extract(hdr.h);", "pkt.extract(hdr.st);", "argument of extract must be a header, not h_t[2]"),
    ("pkt.extract(hdr.h);", "pkt.extract(hdr.v);", "extract with one argument cannot take header v_t"),
    ("pkt.extract(hdr.h);", "m.x = pkt.lookahead<v_t>().a;", "lookahead<v_t>: the type argument must be a "
                                                               "fixed-width type"),
])
def test_packet_in_rules(old: str, new: str, what: str) -> None:
    src = ingress_src("", "").replace("struct headers_t { h_t h; }", "header v_t { bit<8> a; varbit<8> b; }\n"
                                      "struct headers_t { h_t h; h_t[2] st; v_t v; }").replace(old, new)
    with pytest.raises(P4Error) as ei:
        compile_source(src, "err.p4")
    assert what in ei.value.message and ei.value.loc.line == 8


def test_default_action_before_the_action_list() -> None:
    e = compile_err("    table t { default_action = NoAction(); actions = { NoAction; } }", "        t.apply();")
    assert "table 't' has no action list before its 'default_action'" in e.message and e.loc.line == 10


def test_control_instantiated_at_top_level() -> None:
    src = ingress_src("", "").replace(ING, "control C() { apply { } }\nC() c;\n" + ING)
    with pytest.raises(P4Error, match=r"err\.p4:10:5: error: c: a control cannot be instantiated at the top level"):
        compile_source(src, "err.p4")


@pytest.mark.parametrize("version,what", [("-6419018", "expected the v1model version to be a non-negative number"),
                                          ("20000101", "V1MODEL_VERSION 20000101: unknown v1model version")])
def test_v1model_version_is_checked(version: str, what: str) -> None:
    with pytest.raises(P4Error) as ei:
        compile_source(ingress_src("", ""), "err.p4", defines={"V1MODEL_VERSION": version})
    assert what in ei.value.message and ei.value.loc.file.endswith("v1model.p4")
    compile_source(ingress_src("", ""), "ok.p4", defines={"V1MODEL_VERSION": "20200408"})


def test_actions_with_one_control_plane_name_conflict() -> None:
    src = ingress_src("    @name(\".foo\") action a() { }", "        a();").replace(ING, "action foo() { }\n" + ING)
    with pytest.raises(P4Error, match=r"err\.p4:11:26: error: action 'a': conflicting control plane name '\.foo' "
                                      r"\(the action at err\.p4:9 has it too\)"):
        compile_source(src, "err.p4")
    compile_source(src.replace("@name(\".foo\") ", ""), "ok.p4")  # Ing.a and foo differ


def test_two_instances_sharing_a_table_name_are_refused() -> None:
    sub = "control S(inout meta_t m) {\n    @name(\".t0\") table t0 { actions = { NoAction; } }\n    apply { t0.apply(); } }\n"
    src = ingress_src("    S() s1;\n    S() s2;", "        s1.apply(m); s2.apply(m);").replace(ING, sub + ING)
    with pytest.raises(P4Error, match=r"err\.p4:10:24: error: table 't0': control-plane name 't0' is used for more "
                                      r"than one table"):
        compile_source(src, "err.p4")
    compile_source(src.replace('@name(".t0") ', ""), "ok.p4")  # Ing.s1.t0 and Ing.s2.t0


METER = """    direct_meter<bit<2>>(MeterType.packets) dm;
    action r() { dm.read(m.x[1:0]); }
    action n() { }
    table t { key = { hdr.h.a : exact; } actions = { %s; } %s }"""


def test_direct_meter_read_by_an_action_of_a_table_without_it() -> None:
    e = compile_err(METER % ("r", ""), "        t.apply();")
    assert "action 'r' of table 't' reads direct_meter 'dm', which the table does not list as 'meters'" in e.message


@pytest.mark.parametrize("locals_,what", [
    (METER % ("n", "meters = dm;"), "table 't': direct_meter 'dm' is read by none of its actions: BMv2 rejects this"),
    ("    table t { key = { hdr.h.a : lpm; hdr.h.c : lpm; } actions = { NoAction; } }",
     "table 't' has 2 lpm keys: BMv2 rejects this (one lpm key per table)"),
])
def test_bmv2_limits_innet_runs_are_warnings(locals_: str, what: str, caplog: pytest.LogCaptureFixture) -> None:
    compile_source(ingress_src(locals_, "        t.apply();"), "warn.p4")
    assert any(what in r.getMessage() and r.getMessage().startswith("warn.p4:") for r in caplog.records)
    caplog.clear()
    compile_source(ingress_src(METER % ("r", "meters = dm;"), "        t.apply();"), "ok.p4")
    assert not caplog.records


def test_a_header_as_v1switch_headers_type_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    src = ingress_src("", "").replace("out headers_t hdr", "out h_t hdr").replace("pkt.extract(hdr.h)", "pkt.extract(hdr)")
    src = src.replace("headers_t hdr", "h_t hdr").replace("pkt.emit(hdr.h)", "pkt.emit(hdr)")
    compile_source(src, "warn.p4")
    assert any("the headers type of V1Switch is header h_t, not a struct: BMv2 rejects this" in r.getMessage()
               for r in caplog.records)


@pytest.mark.parametrize("decl,what", [
    ("parser q(packet_in p) { state start { transition s1; } state s1 { transition start; } }",
     "parser q never reaches the accept or reject state"),
    ("control q(inout bit<8> x) { action a() { switch (x) { 8w0: { } } } apply { a(); } }",
     "switch statements are not allowed in actions"),
    ("bit<8> f() { return 1; }\ncontrol q(in bit<8> x) { table t { key = { f() : exact @name(\"k\"); } "
     "actions = { NoAction; } } apply { t.apply(); } }", "table 't': no function calls are allowed in a table key"),
    ("bit<8> f() { return 1; }\nparser q(packet_in p, in bit<8> x) { state start { transition select(x) "
     "{ f(): accept; default: reject; } } }", "select case: no function calls are allowed in a keyset"),
    ("@p4runtime_translation(\"p4.org/x\", bool) type bit<8> T;",
     "@p4runtime_translation(\"p4.org/x\", bool): the second argument must be an integer width, bit<W> or string"),
    ("control q(in bit<8> x) { action a(in bit<8> v) { } table u { actions = { NoAction; } }\n"
     "table t { actions = { a(u.apply().hit ? x : x); } } apply { t.apply(); } }",
     "argument 'v' of action 'a': a table cannot be applied in an action argument"),
])
def test_p4c_block_rules(decl: str, what: str) -> None:
    with pytest.raises(P4Error) as ei:
        compile_source("#include <core.p4>\n" + decl + "\n", "decl.p4")
    assert what in ei.value.message and ei.value.loc.file == "decl.p4"


def test_translation_widths_p4c_accepts() -> None:
    for t in ("32", "bit<32>", "string"):
        compile_source(f"@p4runtime_translation(\"p4.org/x\", {t}) type bit<8> T;\n", "ok.p4")


def test_default_action_must_repeat_the_list_binding() -> None:
    locals_ = """    action a(inout bit<8> v, bit<8> d) { v = d; }
    table t { actions = { a(m.x); } default_action = a(%s, 1); }"""
    e = compile_err(locals_ % "hdr.h.a", "        t.apply();")
    assert "argument 'v' of action 'a' does not match the one its actions list binds" in e.message and e.loc.line == 11
    compile_source(ingress_src(locals_ % "m.x", "        t.apply();"), "ok.p4")


def test_pkginfo_needs_key_value_pairs() -> None:
    with pytest.raises(P4Error, match=r"decl\.p4:1:1: error: @pkginfo needs a body of key=value pairs"):
        compile_source("@pkginfo\nconst bit<32> x = 0;\n", "decl.p4")
    compile_source("@pkginfo(version=\"1.0\")\nconst bit<32> x = 0;\n", "ok.p4")


def test_a_leading_dot_names_the_top_level_declaration() -> None:
    src = ingress_src("    action b() { m.x = 2; }\n    table t { actions = { b; } default_action = .b(); }",
                      "        t.apply();").replace(ING, "action b() { }\n" + ING)
    with pytest.raises(P4Error, match=r"err\.p4:12:49: error: default action 'b' is not in the actions list of table 't'"):
        compile_source(src, "err.p4")
    compile_source(src.replace("default_action = .b()", "default_action = b()"), "ok.p4")
    p = compile_source(ingress_src("    bit<8> x = 1;", "        m.x = .x;").replace(ING, "const bit<8> x = 7;\n" + ING),
                       "ok.p4")
    ing = p.controls["Ing"]
    assert any(isinstance(s, ir.Assign) and isinstance(s.rhs, ir.Const) and s.rhs.value == 7 for s in ing.body.stmts)


def test_a_type_is_cast_only_from_its_underlying_type() -> None:
    decl = "type bit<1> t1;\nt1 f(bit<2> a) { return (t1)a; }\n"
    with pytest.raises(P4Error, match=r"decl\.p4:2:25: error: cannot cast bit<2> to type t1: a 'type' is cast only "
                                      r"from its underlying type bit<1>"):
        compile_source(decl, "decl.p4")
    compile_source(decl.replace("bit<2> a", "bit<1> a"), "ok.p4")
    compile_source("type bit<8> t8;\nt8 f() { return (t8)3; }\n", "ok.p4")


NEWTYPE_SHIFT = """
type bit<8> Amount;
header h_t { bit<32> a; Amount n; }
struct s_t { h_t h; }
control c(inout s_t s) {
    apply { s.h.a = s.h.a << SHIFT; }
}
"""


def test_shift_by_a_field_of_a_declared_type_is_rejected() -> None:
    """``type`` makes a new type: p4c refuses it as a shift amount, though its base is bit<8>."""
    with pytest.raises(P4Error, match=r"t.p4:6:\d+: error: shift amount must be an unsigned bit<W> or int, not "
                                      r"Amount \(a 'type' over bit<8>\); cast it to bit<8>"):
        compile_source(NEWTYPE_SHIFT.replace("SHIFT", "s.h.n"), "t.p4")


@pytest.mark.parametrize("local,amount", [("Amount v = (Amount)8w1;", "v"), ("", "p")])
def test_shift_by_a_variable_or_parameter_of_a_declared_type_is_rejected(local: str, amount: str) -> None:
    src = NEWTYPE_SHIFT.replace("control c(inout s_t s) {", "control c(inout s_t s, in Amount p) {\n    " + local)
    with pytest.raises(P4Error, match=r"t.p4:7:\d+: error: shift amount must be an unsigned bit<W> or int, not "
                                      r"Amount \(a 'type' over bit<8>\)"):
        compile_source(src.replace("SHIFT", amount), "t.p4")


def test_shift_by_a_cast_field_of_a_declared_type_is_accepted() -> None:
    prog = compile_source(NEWTYPE_SHIFT.replace("SHIFT", "(bit<8>)s.h.n"), "t.p4")
    assert prog.types["h_t"].fields[1].type_name == "Amount"


def test_structured_annotation_values_are_typed() -> None:
    src = "extern e { e(); }\ne() t;\ne() t1;\n@tag[t == t1] typedef bit<8> b1;\n"
    with pytest.raises(P4Error, match=r"a.p4:4:6: error: operator '==' on two e instances: externs cannot be compared"):
        compile_source(src, "a.p4")
    with pytest.raises(P4Error, match=r"a.p4:1:\d+: error: undefined name 'nope'"):
        compile_source("@tag[1, nope] typedef bit<8> b1;\n", "a.p4")


def test_structured_annotation_with_constant_expressions_is_accepted() -> None:
    prog = compile_source('const bit<8> X = 1;\n@tag[X + 1, "s", true] @kv[a = 1, b = X] typedef bit<8> b1;\n', "a.p4")
    assert prog.consts["X"].value == 1
