"""Focused parse + IR tests, one per P4_16 construct the front-end supports."""

from __future__ import annotations

from innet.switch.frontend import compile_source, ir

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header h_t { bit<8> a; bit<8> b; bit<16> c; }
struct headers_t { eth_t eth; h_t h; }
struct meta_t { bit<8> x; bit<16> y; bit<32> z; }
"""

TAIL = """
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Egr(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
"""

DEFAULT_PARSER = """
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.h); transition accept; }
}
"""


def prog(ingress_locals: str = "", ingress_body: str = "", decls: str = "",
         parser: str = DEFAULT_PARSER) -> ir.Program:
    src = (PRELUDE + decls + parser +
           "control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {\n"
           + ingress_locals + "\n apply {\n" + ingress_body + "\n }\n}\n" + TAIL)
    return compile_source(src, "test.p4")


def ingress(p: ir.Program) -> ir.Control:
    blk = p.main.args[2].decl  # type: ignore[union-attr]
    assert isinstance(blk, ir.Control)
    return blk


def body(p: ir.Program) -> tuple[ir.Stmt, ...]:
    return ingress(p).body.stmts


def rhs(p: ir.Program, i: int = 0) -> ir.Expr:
    s = body(p)[i]
    assert isinstance(s, ir.Assign)
    return s.rhs


def test_main_package_and_blocks() -> None:
    p = prog()
    assert p.main is not None and p.main.type_name == "V1Switch"
    assert [a.cp_name for a in p.main.args] == ["P", "VC", "Ing", "Egr", "CC", "D"]
    assert isinstance(p.main.args[0].decl, ir.Parser)
    assert set(p.controls) == {"VC", "Ing", "Egr", "CC", "D"}
    assert p.errors[:7] == ("NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds",
                            "HeaderTooShort", "ParserTimeout", "ParserInvalidArgument")
    assert p.match_kinds == ("exact", "ternary", "lpm", "range", "optional", "selector")
    sm = p.types["standard_metadata_t"]
    assert isinstance(sm, ir.StructT)
    assert [f.name for f in sm.fields][:5] == ["ingress_port", "egress_spec", "egress_port",
                                                "instance_type", "packet_length"]


def test_headers_structs_typedef_type_const() -> None:
    p = prog(decls="typedef bit<9> port_t; type bit<32> tag_t; const port_t CPU = 255;\n"
             "const int W = 4; header w_t { bit<(W*2)> f; int<W> g; }\n",
             ingress_body="sm.egress_spec = CPU; m.x = (bit<8>)W;")
    assert p.types["port_t"] == ir.BitT(9)
    assert p.types["tag_t"] == ir.BitT(32)
    w = p.types["w_t"]
    assert isinstance(w, ir.HeaderT) and w.fields[0].type == ir.BitT(8)
    assert w.fields[1].type == ir.BitT(4, True)
    c = p.consts["CPU"]
    assert isinstance(c, ir.Const) and c.value == 255 and c.type == ir.BitT(9)
    r = rhs(p)
    assert isinstance(r, ir.Const) and r.type == ir.BitT(9) and r.value == 255
    assert isinstance(rhs(p, 1), ir.Const) and rhs(p, 1).value == 4  # type: ignore[union-attr]


def test_literals() -> None:
    p = prog(ingress_body="m.x = 8w5; m.y = 0x1_0; m.z = 0b1010; m.x = 0o17; "
             "m.x = (bit<8>)8s-3; m.y = 16w0xFFFF;")
    vals = [rhs(p, i) for i in range(6)]
    assert [v.value for v in vals] == [5, 16, 10, 15, 253, 0xFFFF]  # type: ignore[union-attr]
    assert vals[0].type == ir.BitT(8)


def test_int_literal_takes_width_of_other_operand() -> None:
    p = prog(ingress_body="m.x = hdr.h.a + 1; m.z = m.z << 3; m.y = hdr.h.a ++ 8w1;")
    e = rhs(p)
    assert isinstance(e, ir.Binary) and e.op == "+"
    assert isinstance(e.right, ir.Const) and e.right.type == ir.BitT(8)
    sh = rhs(p, 1)
    assert isinstance(sh, ir.Binary) and sh.op == "<<" and sh.type == ir.BitT(32)
    cc = rhs(p, 2)
    assert isinstance(cc, ir.Binary) and cc.op == "++" and cc.type == ir.BitT(16)


def test_saturating_ternary_casts_slices() -> None:
    p = prog(ingress_body="m.x = hdr.h.a |+| hdr.h.b; m.x = hdr.h.a |-| 1; "
             "m.x = hdr.h.a > 3 ? hdr.h.a : 8w3; m.x = hdr.h.c[11:4]; hdr.h.c[3:0] = 4w7; "
             "m.x = (bit<8>)hdr.h.c; m.z = (bit<32>)(int<32>)(int<8>)hdr.h.a;")
    assert rhs(p).op == "|+|" and rhs(p, 1).op == "|-|"  # type: ignore[union-attr]
    assert isinstance(rhs(p, 2), ir.Mux)
    sl = rhs(p, 3)
    assert isinstance(sl, ir.Slice) and (sl.hi, sl.lo) == (11, 4) and sl.type == ir.BitT(8)
    lv = body(p)[4]
    assert isinstance(lv, ir.Assign) and isinstance(lv.lhs, ir.Slice)
    c = rhs(p, 6)
    assert isinstance(c, ir.Cast) and isinstance(c.e, ir.Cast) and c.e.type == ir.BitT(32, True)
    assert isinstance(c.e.e, ir.Cast) and c.e.e.type == ir.BitT(8, True)


def test_bool_and_bit1_differ_and_isvalid() -> None:
    p = prog(ingress_body="bool v = hdr.h.isValid(); bit<1> b = (bit<1>)v; "
             "if (v && b == 1) { hdr.h.setInvalid(); } else { hdr.h.setValid(); }")
    st = body(p)
    assert isinstance(st[0], ir.VarDeclStmt) and st[0].decl.type == ir.BoolT()
    init = st[0].init
    assert isinstance(init, ir.MethodCall) and init.method == "isValid"
    assert isinstance(st[2], ir.If)
    assert isinstance(st[2].then.stmts[0], ir.CallStmt)


def test_enums_and_errors() -> None:
    p = prog(decls="enum bit<8> Color { Red = 1, Green = 2 } enum Mode { A, B }\n"
             "error { MyErr }\n",
             ingress_body="Color c = (Color)hdr.h.a; hdr.h.b = (bit<8>)c; Mode md = Mode.B;"
             "if (sm.parser_error == error.MyErr) { m.x = 1; }"
             "switch (c) { Color.Red: { m.x = 2; } default: { m.x = 3; } }")
    col = p.types["Color"]
    assert isinstance(col, ir.EnumT) and col.values == (1, 2) and col.value_of("Green") == 2
    assert p.errors[-1] == "MyErr"
    md = body(p)[2]
    assert isinstance(md, ir.VarDeclStmt) and isinstance(md.init, ir.EnumMember)
    cond = body(p)[3].cond  # type: ignore[attr-defined]
    assert isinstance(cond.right, ir.ErrorMember) and cond.right.name == "MyErr"
    sw = body(p)[4]
    assert isinstance(sw, ir.Switch)
    assert isinstance(sw.cases[0].labels[0], ir.EnumMember)
    assert isinstance(sw.cases[1].labels[0], ir.DefaultKey)


def test_header_stack_ops_and_parser_loop() -> None:
    parser = """
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition s; }
    state s {
        pkt.extract(hdr.st.next);
        m.x = (bit<8>)hdr.st.lastIndex;
        transition select(hdr.st.last.a) { 0: accept; default: s; }
    }
}"""
    src = (PRELUDE.replace("struct headers_t { eth_t eth; h_t h; }",
                           "struct headers_t { eth_t eth; h_t h; h_t[4] st; }")
           + parser + "control Ing(inout headers_t hdr, inout meta_t m, inout "
           "standard_metadata_t sm) { apply { hdr.st.push_front(1); hdr.st.pop_front(2); "
           "hdr.st[0].setValid(); hdr.st[m.x].a = 1; m.x = hdr.st[3].b; } }" + TAIL)
    p = compile_source(src, "stack.p4")
    ps = p.main.args[0].decl  # type: ignore[union-attr]
    assert isinstance(ps, ir.Parser)
    ext = ps.states["s"].body[0]
    assert isinstance(ext, ir.CallStmt) and isinstance(ext.call, ir.MethodCall)
    arg = ext.call.args[0].expr
    assert isinstance(arg, ir.StackProp) and arg.prop == "next"
    sel = ps.states["s"].transition
    assert isinstance(sel, ir.Select) and isinstance(sel.keys[0], ir.Member)
    assert isinstance(sel.cases[1].keys[0], ir.DefaultKey) and sel.cases[1].keys[0].is_default
    ing = p.main.args[2].decl  # type: ignore[union-attr]
    pf = ing.body.stmts[0].call  # type: ignore[union-attr]
    assert pf.method == "push_front" and pf.args[0].expr.value == 1
    dyn = ing.body.stmts[3].lhs  # type: ignore[union-attr]
    assert isinstance(dyn, ir.Member) and isinstance(dyn.base, ir.StackElem)


def test_select_tuple_mask_range_dontcare() -> None:
    parser = """
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type, hdr.eth.dst[7:0]) {
            (0x0800, 1): parse_h;
            (0x8100 &&& 0xFF00, _): parse_h;
            (16w1 .. 16w10, 8w5): reject;
            default: accept;
        }
    }
    state parse_h { pkt.extract(hdr.h); verify(hdr.h.a != 0, error.NoMatch); transition accept; }
}"""
    p = prog(parser=parser)
    st = p.main.args[0].decl.states["start"]  # type: ignore[union-attr]
    sel = st.transition
    assert isinstance(sel, ir.Select) and len(sel.keys) == 2
    c0, c1, c2, c3 = sel.cases
    assert [type(k) for k in c0.keys] == [ir.Const, ir.Const]
    assert c0.keys[0].type == ir.BitT(16) and c0.keys[1].type == ir.BitT(8)
    assert isinstance(c1.keys[0], ir.Mask) and isinstance(c1.keys[1], ir.DefaultKey)
    assert not c1.keys[1].is_default
    assert isinstance(c2.keys[0], ir.Range) and c2.state == "reject"
    assert all(isinstance(k, ir.DefaultKey) for k in c3.keys)
    ver = p.main.args[0].decl.states["parse_h"].body[1].call  # type: ignore[union-attr]
    assert isinstance(ver, ir.ExternCall) and ver.name == "verify"


def test_lookahead_and_advance() -> None:
    parser = """
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        m.x = pkt.lookahead<bit<8>>();
        h_t tmp = pkt.lookahead<h_t>();
        pkt.advance(32w16);
        transition accept;
    }
}"""
    p = prog(parser=parser)
    st = p.main.args[0].decl.states["start"]  # type: ignore[union-attr]
    la = st.body[0].rhs  # type: ignore[union-attr]
    assert isinstance(la, ir.MethodCall) and la.method == "lookahead" and la.type == ir.BitT(8)
    assert la.type_args == (ir.BitT(8),)
    assert st.body[1].init.type.name == "h_t"  # type: ignore[union-attr]
    adv = st.body[2].call  # type: ignore[union-attr]
    assert adv.method == "advance" and adv.args[0].expr.value == 16


def test_tables_full() -> None:
    locs = """
    direct_counter(CounterType.packets) dc;
    action_profile(32w64) ap;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action set2(inout bit<8> v, bit<8> d) { v = d; }
    @name("ipv4_lpm") table t {
        key = { hdr.eth.dst : lpm; hdr.h.a : ternary @name("aa"); hdr.h.b : exact; hdr.h.c : range;
                m.x : optional; hdr.h.isValid() : exact; }
        actions = { fwd; set2(m.x); @defaultonly NoAction; }
        const default_action = fwd(9w1);
        size = 1024;
        counters = dc;
        support_timeout = true;
        @my_anno("k") my_prop = 5;
    }
    table t2 {
        key = { hdr.h.a : exact; }
        actions = { fwd; NoAction; }
        implementation = ap;
        const entries = {
            1 : fwd(2);
            2 : NoAction() @priority(10);  // p4c rejects "priority=" in const entries
        }
    }
    """
    p = prog(locs, "t.apply(); if (t2.apply().hit) { m.x = 1; }")
    ing = ingress(p)
    t, t2 = ing.tables
    assert t.cp_name == "Ing.ipv4_lpm" and t.name == "t"
    assert [k.name for k in t.keys] == ["hdr.eth.dst", "aa", "hdr.h.b", "hdr.h.c", "m.x",
                                        "hdr.h.isValid()"]
    assert [k.match_kind for k in t.keys] == ["lpm", "ternary", "exact", "range", "optional",
                                              "exact"]
    assert [r.action.cp_name for r in t.actions] == ["Ing.fwd", "Ing.set2", "NoAction"]
    assert "defaultonly" in t.actions[2].annotations
    assert len(t.actions[1].args) == 1
    assert t.default_is_const and t.default_action.action.name == "fwd"
    assert t.default_action.args[0].type == ir.BitT(9)
    assert t.size == 1024 and t.idle_timeout
    assert t.direct_counter is not None and t.direct_counter.cp_name == "Ing.dc"
    assert t.properties["my_prop"].value == 5  # type: ignore[attr-defined]
    assert t2.implementation is not None and t2.implementation.type == ir.ExternT("action_profile")
    assert t2.const_entries is not None and len(t2.const_entries) == 2
    assert t2.const_entries[1].action.annotations["priority"].body == (10,)
    assert t2.const_entries[0].action.args[0].value == 2  # type: ignore[attr-defined]
    assert not t2.default_action_given and t2.default_action.action.name == "NoAction"
    cond = ing.body.stmts[1].cond  # type: ignore[attr-defined]
    assert isinstance(cond, ir.Member) and cond.name == "hit" and isinstance(cond.base, ir.TableApply)


def test_switch_action_run_and_fallthrough() -> None:
    locs = """
    action a() {} action b() {} action c() {}
    table t { key = { hdr.h.a : exact; } actions = { a; b; c; } }
    """
    p = prog(locs, "switch (t.apply().action_run) { a: b: { m.x = 1; } c: { m.x = 2; } "
             "default: { m.x = 3; } }")
    sw = body(p)[0]
    assert isinstance(sw, ir.Switch) and isinstance(sw.expr.type, ir.ActionEnumT)
    labels = [[getattr(lb, "action", None) and lb.action.name for lb in c.labels] for c in sw.cases]
    assert labels[0] == ["a", "b"] and labels[1] == ["c"]
    assert isinstance(sw.cases[2].labels[0], ir.DefaultKey)


def test_actions_exit_return_direct_action_call() -> None:
    locs = "action drop() { mark_to_drop(sm); exit; } action setx(bit<8> v) { m.x = v; return; }"
    p = prog(locs, "setx(5); drop(); if (m.x == 0) { return; } exit;")
    ing = ingress(p)
    drop = next(a for a in ing.actions if a.name == "drop")
    assert isinstance(drop.body.stmts[1], ir.Exit)
    call = drop.body.stmts[0].call  # type: ignore[attr-defined]
    assert isinstance(call, ir.ExternCall) and call.name == "mark_to_drop"
    ac = body(p)[0].call  # type: ignore[attr-defined]
    assert isinstance(ac, ir.ActionCall) and ac.args[0].expr.type == ir.BitT(8)
    assert isinstance(body(p)[3], ir.Exit)


def test_functions() -> None:
    p = prog(decls="bit<8> inc(in bit<8> v) { return v + 1; }\n",
             ingress_body="m.x = inc(hdr.h.a);")
    fc = rhs(p)
    assert isinstance(fc, ir.FunctionCall) and fc.func.name == "inc" and fc.type == ir.BitT(8)
    assert isinstance(p.functions["inc"].body.stmts[0], ir.Return)


def test_externs_registers_counters_meters_hash_digest() -> None:
    decls = "struct dig_t { bit<8> a; bit<16> c; }\n"
    locs = """
    register<bit<32>>(1024) r;
    counter(32w16, CounterType.packets_and_bytes) cnt;
    meter(32w8, MeterType.bytes) mt;
    direct_meter<bit<2>>(MeterType.packets) dm;
    """
    p = prog(locs, "r.read(m.z, 5); r.write(5, m.z + 1); cnt.count(3); "
             "bit<2> col; mt.execute_meter(32w1, col); "
             "hash(m.y, HashAlgorithm.crc16, 16w0, { hdr.h.a, hdr.h.c }, 32w1024); "
             "digest<dig_t>(1, { hdr.h.a, hdr.h.c }); "
             "random(m.x, 0, 255); clone(CloneType.I2E, 5); log_msg(\"x={}\", {m.x});"
             "update_checksum(true, { hdr.h.a }, hdr.h.c, HashAlgorithm.csum16);", decls)
    ing = ingress(p)
    r = next(i for i in ing.instances if i.name == "r")
    assert r.cp_name == "Ing.r" and r.type == ir.ExternT("register", (ir.BitT(32),))
    assert r.ctor_args[0].value == 1024 and r.ctor_args[0].type == ir.BitT(32)  # type: ignore
    rd = body(p)[0].call  # type: ignore[attr-defined]
    assert isinstance(rd, ir.MethodCall) and isinstance(rd.target, ir.InstanceRef)
    assert rd.args[1].expr.type == ir.BitT(32)
    h = body(p)[5].call  # type: ignore[attr-defined]
    assert isinstance(h, ir.ExternCall) and h.name == "hash"
    assert isinstance(h.args[3].expr, ir.ListExpr)
    assert h.type_args[0] == ir.BitT(16)
    dg = p.digest_calls[0]
    assert dg.type_args[0] == p.types["dig_t"]
    assert isinstance(dg.args[1].expr, ir.StructInit)
    rnd = body(p)[7].call  # type: ignore[attr-defined]
    assert rnd.args[1].expr.type == ir.BitT(8)


def test_struct_initializer_and_list_assignment() -> None:
    p = prog(decls="struct pair_t { bit<8> a; bit<16> b; }\n",
             ingress_body="pair_t q = { a = 1, b = 2 }; pair_t r2 = { 3, 4 }; "
             "hdr.h = { 1, 2, 3 };")
    q = body(p)[0].init  # type: ignore[attr-defined]
    assert isinstance(q, ir.StructInit) and q.type.name == "pair_t"
    assert q.fields[1][1].type == ir.BitT(16)
    h = rhs(p, 2)
    assert isinstance(h, ir.StructInit) and isinstance(h.type, ir.HeaderT)


def test_size_methods_fold() -> None:
    p = prog(ingress_body="m.z = (bit<32>)hdr.h.minSizeInBytes(); "
             "m.z = (bit<32>)hdr.eth.minSizeInBits();")
    assert rhs(p).value == 4 and rhs(p, 1).value == 112  # type: ignore[union-attr]


def test_header_union() -> None:
    src = (PRELUDE.replace("struct headers_t { eth_t eth; h_t h; }",
                           "header_union u_t { eth_t e; h_t h; }\n"
                           "struct headers_t { eth_t eth; h_t h; u_t u; }")
           + DEFAULT_PARSER + "control Ing(inout headers_t hdr, inout meta_t m, inout "
           "standard_metadata_t sm) { apply { if (hdr.u.isValid()) { hdr.u.h.setValid(); } } }"
           + TAIL)
    p = compile_source(src, "u.p4")
    u = p.types["u_t"]
    assert isinstance(u, ir.HeaderUnionT) and [f.name for f in u.fields] == ["e", "h"]


def test_sub_control_specialised_per_instance() -> None:
    decls = """
control Sub(inout headers_t hdr, inout meta_t m) {
    register<bit<8>>(4) reg;
    action a() { m.x = 1; }
    table t { key = { hdr.h.a : exact; } actions = { a; } }
    apply { t.apply(); }
}
"""
    p = prog("Sub() s1; @name(\"other\") Sub() s2;", "s1.apply(hdr, m); s2.apply(hdr, m);",
             decls)
    ing = ingress(p)
    s1, s2 = ing.instances
    assert s1.cp_name == "Ing.s1" and s2.cp_name == "Ing.other"
    assert isinstance(s1.decl, ir.Control) and s1.decl is not s2.decl
    assert s1.decl.instance_path == "Ing.s1"
    assert s1.decl.tables[0].cp_name == "Ing.s1.t"
    assert s2.decl.tables[0].cp_name == "Ing.other.t"
    assert s1.decl.actions[0].cp_name == "Ing.s1.a"
    assert s1.decl.instances[0].cp_name == "Ing.s1.reg"
    assert s1.decl.params[0].uid != s2.decl.params[0].uid
    ap = body(p)[0].call  # type: ignore[attr-defined]
    assert isinstance(ap, ir.MethodCall) and ap.method == "apply" and ap.target.inst is s1
    names = [t.cp_name for c in p.reachable_controls() for t in c.tables]
    assert "Ing.s1.t" in names and "Ing.other.t" in names and "Sub.t" not in names


def test_sub_parser() -> None:
    decls = """
parser SubP(packet_in pkt, out h_t hh) {
    state start { pkt.extract(hh); transition accept; }
}
"""
    parser = """
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    SubP() sp;
    state start { pkt.extract(hdr.eth); sp.apply(pkt, hdr.h); transition accept; }
}"""
    p = prog(decls=decls, parser=parser)
    ps = p.main.args[0].decl
    assert isinstance(ps, ir.Parser)
    sp = ps.locals[0]
    assert isinstance(sp, ir.Instance) and isinstance(sp.decl, ir.Parser)
    assert sp.cp_name == "P.sp"


def test_annotations_kept() -> None:
    p = prog("@id(0x1234) @brief(\"doc\") @unknown_thing(1, \"x\", k = 3) "
             "action a(@name(\"port\") bit<9> p) { sm.egress_spec = p; }",
             decls="@controller_header(\"packet_out\") header po_t { bit<9> port; }\n")
    a = ingress(p).actions[0]
    assert a.annotations["id"].body == (0x1234,)
    assert a.annotations["brief"].body == ("doc",)
    assert a.annotations["unknown_thing"].body == (1, "x", ("k", 3))
    assert a.params[0].annotations["name"].body == ("port",)
    po = p.types["po_t"]
    assert po.annotations["controller_header"].body == ("packet_out",)  # type: ignore[attr-defined]


def test_field_list_annotation_and_preserving() -> None:
    src = PRELUDE.replace("struct meta_t { bit<8> x; bit<16> y; bit<32> z; }",
                          "struct meta_t { @field_list(1) bit<8> x; bit<16> y; bit<32> z; }")
    src += DEFAULT_PARSER + ("control Ing(inout headers_t hdr, inout meta_t m, inout "
                             "standard_metadata_t sm) { apply { resubmit_preserving_field_list(1);"
                             " clone_preserving_field_list(CloneType.I2E, 1, 1); } }") + TAIL
    p = compile_source(src, "fl.p4")
    mt = p.types["meta_t"]
    assert mt.fields[0].annotations["field_list"].body == (1,)  # type: ignore[attr-defined]


def test_v1model_version_20200408() -> None:
    src = "#define V1MODEL_VERSION 20200408\n" + PRELUDE + DEFAULT_PARSER + (
        "control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {"
        " register<bit<8>, bit<4>>(16) r; apply { r.write(4w2, 8w1); } }") + TAIL
    p = compile_source(src, "v2.p4")
    r = ingress(p).instances[0]
    assert r.type == ir.ExternT("register", (ir.BitT(8), ir.BitT(4)))
    assert p.types["PortId_t"] == ir.BitT(9)


def test_uids_unique() -> None:
    p = prog("action a(bit<8> v) { m.x = v; } bit<8> tmp;", "tmp = 1; a(tmp);")
    uids: list[int] = []
    for blk in p.reachable_blocks():
        uids += [q.uid for q in blk.params]
    ing = ingress(p)
    uids += [q.uid for a in ing.actions for q in a.params]
    uids += [v.decl.uid for v in ing.locals if isinstance(v, ir.VarDeclStmt)]
    assert len(uids) == len(set(uids))


def test_compiles_300_lines() -> None:
    """A program of 120 actions and 60 tables compiles whole (its compile time is measured by
    the compile benchmark, not asserted here: a timed test only measures the machine's load)."""
    locs = "\n".join(f"action a{i}(bit<8> v) {{ m.x = v + {i}; hdr.h.b = hdr.h.a ^ v; }}"
                     for i in range(120))
    tables = "\n".join(f"table t{i} {{ key = {{ hdr.h.a : exact; }} actions = {{ a{i}; NoAction; }} "
                       "default_action = NoAction(); }" for i in range(60))
    applies = "\n".join(f"if (hdr.h.a == {i}) {{ t{i}.apply(); }}" for i in range(60))
    p = prog(locs + "\n" + tables, applies)
    assert len(ingress(p).tables) == 60
    assert {f"a{i}" for i in range(120)} <= {a.name for a in ingress(p).actions}


def test_struct_and_header_equality() -> None:
    p = prog(decls="struct pair_t { bit<8> a; bit<16> b; }\n",
             ingress_body="pair_t q = { 1, 2 }; pair_t r = q; "
             "if (q == r && hdr.h != hdr.h && q == { 8w1, 16w2 }) { m.x = 1; }")
    cond = body(p)[2].cond  # type: ignore[attr-defined]
    assert isinstance(cond, ir.Binary) and cond.op == "&&"
    last = cond.right
    assert isinstance(last, ir.Binary) and isinstance(last.right, ir.StructInit)
