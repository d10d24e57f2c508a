"""P4Info built from a hand-made IR (independent of the parser).

The program mirrors p4lang/tutorials' basic exercise plus externs, a sub-control, a
digest and a controller header; ids of the tutorial's objects are the ones p4c publishes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from finsy.proto import p4i

from innet.switch.frontend import ir
from innet.switch.p4info import (
    P4InfoError,
    P4InfoFormat,
    build_p4info,
    format_annotation,
    format_for_path,
    hashed_id,
    parse_p4info,
    serialize,
    to_text,
    write_p4info,
)
from innet.switch.p4info.ids import Prefix

B9, B32, B48 = ir.BitT(9), ir.BitT(32), ir.BitT(48)
_uid = iter(range(1, 10_000))


def param(name: str, t: ir.Type, direction: str | None = None, **ann: ir.Annotation) -> ir.Param:
    return ir.Param(name, direction, t, next(_uid), annotations=dict(ann))


def action(name: str, cp: str, params: tuple[ir.Param, ...] = (), body: tuple[ir.Stmt, ...] = (),
           **ann: ir.Annotation) -> ir.Action:
    return ir.Action(name, cp, params, ir.Block(body), dict(ann))


def const(v: int, t: ir.Type) -> ir.Const:
    return ir.Const(v, t)


def extern(name: str, cp: str, kind: str, args: tuple[ir.Expr, ...], targs: tuple[ir.Type, ...] = (),
           **ann: ir.Annotation) -> ir.Instance:
    return ir.Instance(name, cp, ir.ExternT(kind, targs), None, args, dict(ann))


def member(enum_name: str, m: str) -> ir.EnumMember:
    return ir.EnumMember(ir.EnumT(enum_name, (m,)), m)


def apply(t: ir.Table) -> ir.CallStmt:
    return ir.CallStmt(ir.TableApply(t, ir.TableApplyT(t.name)))


IPV4 = ir.HeaderT("ipv4_t", (ir.Field("dstAddr", B32),))
LEARN = ir.StructT("learn_t", (ir.Field("src", B48), ir.Field("port", B9)))
COLOR = ir.EnumT("Color", ("Red", "Blue"), ir.BitT(8), (1, 0x10))
PKT_OUT = ir.HeaderT(
    "packet_out_header_t",
    (ir.Field("egress_port", B9), ir.Field("_pad", ir.BitT(7), {"hidden": ir.Annotation("hidden")})),
    {"controller_header": ir.Annotation("controller_header", ("packet_out",), '"packet_out"')},
)
HDR_VAR = ir.VarDecl("hdr", ir.StructT("headers", (ir.Field("ipv4", IPV4),)), next(_uid))


def key_expr(t: ir.Type) -> ir.Expr:
    return ir.Member(ir.Member(ir.VarRef(HDR_VAR, HDR_VAR.type), "ipv4", IPV4), "dstAddr", t)


def build_program() -> ir.Program:
    no_action = action("NoAction", "NoAction", noWarn=ir.Annotation("noWarn", ("unused",), '"unused"'))
    send_to_cpu = action("send_to_cpu", "send_to_cpu")
    never_used_global = action("never_used", "never_used")

    reg = extern("r", "MyIngress.r", "register", (const(1024, B32),), (B32,),
                 brief=ir.Annotation("brief", ("flow state",), '"flow state"'))
    cnt = extern("c", "MyIngress.c", "counter", (const(64, B32), member("CounterType", "packets")))
    dcnt = extern("dc", "MyIngress.dc", "direct_counter", (member("CounterType", "packets_and_bytes"),))
    mtr = extern("m", "MyIngress.m", "meter", (const(32, B32), member("MeterType", "bytes")))

    drop = action("drop", "MyIngress.drop")
    fwd = action("ipv4_forward", "MyIngress.ipv4_forward", (param("dstAddr", B48), param("port", B9)))
    set_color = action("set_color", "MyIngress.set_color", (param("c", COLOR),))
    direct_called = action("direct_called", "MyIngress.direct_called")
    unused_local = action("unused_local", "MyIngress.unused_local")
    hidden_act = action("hidden_act", "MyIngress.hidden_act", hidden=ir.Annotation("hidden"))

    ipv4_lpm = ir.Table(
        "ipv4_lpm", "MyIngress.ipv4_lpm",
        (ir.Key(key_expr(B32), "lpm", "hdr.ipv4.dstAddr"),),
        (ir.ActionRef(fwd), ir.ActionRef(drop), ir.ActionRef(no_action)),
        ir.ActionRef(drop), size=1024, direct_counter=dcnt, default_action_given=True,
    )
    selector = extern("as", "MyIngress.as", "action_selector",
                      (member("HashAlgorithm", "crc16"), const(128, B32), const(16, B32)),
                      max_group_size=ir.Annotation("max_group_size", (16,), "16"))
    sel_t = ir.Table(
        "sel_t", "MyIngress.sel_t",
        (ir.Key(key_expr(B32), "exact", "hdr.ipv4.dstAddr"), ir.Key(key_expr(B32), "selector", "sel_field")),
        (ir.ActionRef(set_color), ir.ActionRef(hidden_act),
         ir.ActionRef(send_to_cpu, (), {"tableonly": ir.Annotation("tableonly")})),
        ir.ActionRef(set_color, (const(0x10, ir.BitT(8)),)), default_is_const=True, size=0,
        implementation=selector, default_action_given=True,
    )
    unused_t = ir.Table("unused_t", "MyIngress.unused_t", (), (ir.ActionRef(unused_local),),
                        ir.ActionRef(unused_local), default_action_given=True)

    sub_a = action("a", "MyIngress.s.a", (param("v", ir.BitT(16)),))
    sub_t = ir.Table("t", "MyIngress.s.t", (ir.Key(key_expr(B32), "ternary", "hdr.ipv4.dstAddr"),),
                     (ir.ActionRef(sub_a),), ir.ActionRef(no_action), idle_timeout=True)
    sub_reg = extern("sr", "MyIngress.s.sr", "register", (const(4, B32),), (ir.BitT(16),))
    sub = ir.Control("Sub", (), (), (sub_reg, sub_a, sub_t), ir.Block((apply(sub_t),)),
                     instance_path="MyIngress.s")
    sub_inst = ir.Instance("s", "MyIngress.s", ir.ControlT("Sub"), sub, ())

    digest_call = ir.ExternCall("digest", (), (LEARN,), ir.VoidT())
    ingress = ir.Control(
        "MyIngress", (), (),
        (reg, cnt, dcnt, mtr, drop, fwd, set_color, direct_called, unused_local, hidden_act,
         ipv4_lpm, selector, sel_t, unused_t, sub_inst),
        ir.Block((
            apply(ipv4_lpm), apply(sel_t),
            ir.CallStmt(ir.MethodCall(ir.InstanceRef(sub_inst, sub_inst.type), "apply", (), (), ir.VoidT())),
            ir.CallStmt(ir.ActionCall(direct_called, ())),
            ir.CallStmt(digest_call),
        )),
        instance_path="MyIngress",
    )
    e_t = ir.Table("e_t", "MyEgress.e_t", (), (ir.ActionRef(send_to_cpu),), ir.ActionRef(no_action))
    egress = ir.Control("MyEgress", (), (), (e_t,), ir.Block((apply(e_t),)), instance_path="MyEgress")

    def inst(c: ir.Control) -> ir.Instance:
        return ir.Instance(c.name, c.name, ir.ControlT(c.name), c, ())

    empty = [ir.Control(n, (), (), (), ir.Block(()), instance_path=n) for n in ("VC", "CC", "D")]
    parser = ir.Parser("P", (), (), (), {}, instance_path="P")
    main = ir.PackageInstance("main", "V1Switch", (
        ir.Instance("P", "P", ir.ParserT("P"), parser, ()), inst(empty[0]), inst(ingress), inst(egress),
        inst(empty[1]), inst(empty[2])))
    return ir.Program(
        types={"ipv4_t": IPV4, "learn_t": LEARN, "Color": COLOR, "packet_out_header_t": PKT_OUT},
        errors=("NoError",), match_kinds=(), parsers={}, controls={},
        actions={"NoAction": no_action, "send_to_cpu": send_to_cpu, "never_used": never_used_global},
        functions={}, externs={}, consts={}, main=main,
    )


@pytest.fixture(scope="module")
def info() -> p4i.P4Info:
    return build_p4info(build_program())


def names(items: object) -> list[str]:
    return [x.preamble.name for x in items]  # type: ignore[attr-defined]


def by_name(items: object, name: str):  # type: ignore[no-untyped-def]
    for x in items:  # type: ignore[attr-defined]
        if x.preamble.name == name:
            return x
    raise AssertionError(f"{name} not in {names(items)}")


def test_pkg_info_and_type_info_always_present(info: p4i.P4Info) -> None:
    assert info.pkg_info.arch == "v1model"
    assert info.HasField("type_info")


def test_tutorial_ids_match_p4c(info: p4i.P4Info) -> None:
    lpm = by_name(info.tables, "MyIngress.ipv4_lpm")
    assert lpm.preamble.id == 37375156 and lpm.preamble.alias == "ipv4_lpm"
    assert [r.id for r in lpm.action_refs] == [28792405, 25652968, 21257015]
    assert by_name(info.actions, "NoAction").preamble.id == 21257015


def test_tables_in_declaration_order_unused_removed_sub_control_inlined(info: p4i.P4Info) -> None:
    assert names(info.tables) == ["MyIngress.ipv4_lpm", "MyIngress.sel_t", "MyIngress.s.t", "MyEgress.e_t"]


def test_actions_localized_globals_first_then_used_locals(info: p4i.P4Info) -> None:
    # send_to_cpu (global) is used by ingress' sel_t and egress; NoAction first used by ipv4_lpm;
    # direct_called stays (p4c inlines the call but keeps the declaration);
    # unused_local (only used by an unused table) and hidden_act are absent; never_used is absent.
    assert names(info.actions) == [
        "NoAction", "send_to_cpu", "MyIngress.drop", "MyIngress.ipv4_forward", "MyIngress.set_color",
        "MyIngress.direct_called", "MyIngress.s.a",
    ]


def test_action_params(info: p4i.P4Info) -> None:
    fwd = by_name(info.actions, "MyIngress.ipv4_forward")
    assert [(p.id, p.name, p.bitwidth) for p in fwd.params] == [(1, "dstAddr", 48), (2, "port", 9)]
    color = by_name(info.actions, "MyIngress.set_color")
    assert [(p.id, p.name, p.bitwidth) for p in color.params] == [(1, "c", 8)]
    enum = info.type_info.serializable_enums["Color"]
    assert enum.underlying_type.bitwidth == 8
    assert [(m.name, m.value) for m in enum.members] == [("Red", b"\x01"), ("Blue", b"\x10")]


def test_noaction_keeps_its_annotation(info: p4i.P4Info) -> None:
    assert list(by_name(info.actions, "NoAction").preamble.annotations) == ['@noWarn("unused")']


def test_table_fields(info: p4i.P4Info) -> None:
    lpm = by_name(info.tables, "MyIngress.ipv4_lpm")
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in lpm.match_fields] == [
        (1, "hdr.ipv4.dstAddr", 32, p4i.MatchField.LPM)
    ]
    assert lpm.size == 1024 and lpm.const_default_action_id == 0
    assert lpm.initial_default_action.action_id == 25652968
    assert lpm.direct_resource_ids == [hashed_id(Prefix.DIRECT_COUNTER, "MyIngress.dc")]
    assert all(r.scope == p4i.ActionRef.TABLE_AND_DEFAULT for r in lpm.action_refs)


def test_selector_table_and_const_default_with_arguments(info: p4i.P4Info) -> None:
    sel = by_name(info.tables, "MyIngress.sel_t")
    assert [(f.id, f.name) for f in sel.match_fields] == [(1, "hdr.ipv4.dstAddr")]  # selector key skipped
    assert sel.size == 1024  # size = 0 means the default
    set_color_id = by_name(info.actions, "MyIngress.set_color").preamble.id
    assert sel.const_default_action_id == set_color_id
    assert sel.initial_default_action.action_id == set_color_id
    assert [(a.param_id, a.value) for a in sel.initial_default_action.arguments] == [(1, b"\x10")]
    refs = {r.id: r for r in sel.action_refs}
    to_cpu = refs[hashed_id(Prefix.ACTION, "send_to_cpu")]
    assert to_cpu.scope == p4i.ActionRef.TABLE_ONLY and list(to_cpu.annotations) == ["@tableonly"]
    assert sel.implementation_id == hashed_id(Prefix.ACTION_PROFILE, "MyIngress.as")


def test_action_selector_profile(info: p4i.P4Info) -> None:
    (prof,) = info.action_profiles
    assert prof.preamble.name == "MyIngress.as" and prof.preamble.alias == "as"
    assert list(prof.preamble.annotations) == []  # @max_group_size becomes a field
    assert prof.with_selector and prof.size == 128 and prof.max_group_size == 16
    assert prof.HasField("sum_of_weights")
    assert list(prof.table_ids) == [hashed_id(Prefix.TABLE, "MyIngress.sel_t")]


def test_missing_default_adds_defaultonly_noaction(info: p4i.P4Info) -> None:
    e_t = by_name(info.tables, "MyEgress.e_t")
    assert [(r.id, r.scope, list(r.annotations)) for r in e_t.action_refs] == [
        (hashed_id(Prefix.ACTION, "send_to_cpu"), p4i.ActionRef.TABLE_AND_DEFAULT, []),
        (21257015, p4i.ActionRef.DEFAULT_ONLY, ["@defaultonly"]),
    ]
    assert e_t.initial_default_action.action_id == 21257015
    assert list(e_t.match_fields) == []


def test_idle_timeout(info: p4i.P4Info) -> None:
    assert by_name(info.tables, "MyIngress.s.t").idle_timeout_behavior == p4i.Table.NOTIFY_CONTROL
    assert by_name(info.tables, "MyIngress.ipv4_lpm").idle_timeout_behavior == p4i.Table.NO_TIMEOUT


def test_externs(info: p4i.P4Info) -> None:
    assert names(info.registers) == ["MyIngress.r", "MyIngress.s.sr"]
    r = by_name(info.registers, "MyIngress.r")
    assert r.preamble.id == hashed_id(Prefix.REGISTER, "MyIngress.r")
    assert r.size == 1024 and r.type_spec.bitstring.bit.bitwidth == 32
    assert r.preamble.doc.brief == "flow state" and list(r.preamble.annotations) == []
    (c,) = info.counters
    assert (c.preamble.name, c.spec.unit, c.size) == ("MyIngress.c", p4i.CounterSpec.PACKETS, 64)
    (dc,) = info.direct_counters
    assert (dc.preamble.name, dc.spec.unit) == ("MyIngress.dc", p4i.CounterSpec.BOTH)
    assert dc.direct_table_id == 37375156
    (m,) = info.meters
    assert (m.preamble.name, m.spec.unit, m.size) == ("MyIngress.m", p4i.MeterSpec.BYTES, 32)


def test_digest_struct_and_type_info(info: p4i.P4Info) -> None:
    (d,) = info.digests
    assert d.preamble.name == "learn_t" and d.preamble.id == hashed_id(Prefix.DIGEST, "learn_t")
    assert d.type_spec.struct.name == "learn_t"
    members = info.type_info.structs["learn_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [("src", 48), ("port", 9)]


def test_controller_header(info: p4i.P4Info) -> None:
    (h,) = info.controller_packet_metadata
    assert h.preamble.id == 76689799
    assert (h.preamble.name, h.preamble.alias) == ("packet_out", "packet_out")
    assert list(h.preamble.annotations) == ['@controller_header("packet_out")']
    assert [(m.id, m.name, m.bitwidth) for m in h.metadata] == [(1, "egress_port", 9)]  # @hidden skipped


def test_text_format_has_p4c_header_and_round_trips(info: p4i.P4Info, tmp_path: Path) -> None:
    text = to_text(info)
    assert text.startswith("# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n")
    assert 'pkg_info {\n  arch: "v1model"\n}\ntables {\n  preamble {\n    id: 37375156\n' in text
    assert parse_p4info(text.encode()) == info
    for suffix, fmt in ((".txtpb", P4InfoFormat.TEXT), (".json", P4InfoFormat.JSON), (".bin", P4InfoFormat.BINARY)):
        path = tmp_path / f"p4info{suffix}"
        write_p4info(info, path)
        assert format_for_path(path) is fmt
        assert parse_p4info(path.read_bytes(), fmt) == info
        assert serialize(info, fmt) == path.read_bytes()


def test_unknown_suffix_is_named() -> None:
    with pytest.raises(ValueError, match=r"suffix '\.yaml'.*\.txt, \.txtpb, \.json, \.bin"):
        format_for_path(Path("x.yaml"))


def test_format_annotation() -> None:
    assert format_annotation(ir.Annotation("defaultonly")) == "@defaultonly"
    assert format_annotation(ir.Annotation("noWarn", ("unused",), '"unused"')) == '@noWarn("unused")'
    assert format_annotation(ir.Annotation("x", ("a", 3))) == '@x("a", 3)'


def test_bad_action_param_type_is_named() -> None:
    prog = build_program()
    ingress = prog.main.args[2].decl  # type: ignore[union-attr]
    assert isinstance(ingress, ir.Control)
    bad = next(a for a in ingress.actions if a.name == "ipv4_forward")
    bad.params = (param("h", IPV4),)
    with pytest.raises(P4InfoError, match=r"action parameter h of MyIngress.ipv4_forward has type ipv4_t"):
        build_p4info(prog)


def test_conflicting_scopes_are_rejected() -> None:
    prog = build_program()
    ingress = prog.main.args[2].decl
    assert isinstance(ingress, ir.Control)
    t = next(t for t in ingress.tables if t.name == "ipv4_lpm")
    t.actions[0].annotations.update(tableonly=ir.Annotation("tableonly"), defaultonly=ir.Annotation("defaultonly"))
    with pytest.raises(P4InfoError, match="both @tableonly and @defaultonly"):
        build_p4info(prog)


def test_user_ids_on_objects_and_params() -> None:
    prog = build_program()
    ingress = prog.main.args[2].decl
    assert isinstance(ingress, ir.Control)
    fwd = next(a for a in ingress.actions if a.name == "ipv4_forward")
    fwd.annotations["id"] = ir.Annotation("id", (0x42,), "0x42")
    fwd.params[1].annotations["id"] = ir.Annotation("id", (1,), "1")
    info = build_p4info(prog)
    a = by_name(info.actions, "MyIngress.ipv4_forward")
    assert a.preamble.id == 0x01000042
    assert [(p.name, p.id) for p in a.params] == [("dstAddr", 2), ("port", 1)]
