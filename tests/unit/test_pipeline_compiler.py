"""The IR -> Python compiler and v1model architecture on hand-made IR (no front-end needed)."""

from __future__ import annotations

import itertools

import pytest

from innet.switch.frontend import ir
from innet.switch.pipeline import KeySpec, Pipeline, UnsupportedError

_uid = itertools.count(1000)
B8, B9, B16, B32 = ir.BitT(8), ir.BitT(9), ir.BitT(16), ir.BitT(32)

SM = ir.StructT("standard_metadata_t", tuple(ir.Field(n, t) for n, t in [
    ("ingress_port", B9), ("egress_spec", B9), ("egress_port", B9), ("instance_type", B32),
    ("packet_length", B32), ("enq_timestamp", B32), ("enq_qdepth", ir.BitT(19)),
    ("deq_timedelta", B32), ("deq_qdepth", ir.BitT(19)), ("ingress_global_timestamp", ir.BitT(48)),
    ("egress_global_timestamp", ir.BitT(48)), ("mcast_grp", B16), ("egress_rid", B16),
    ("checksum_error", ir.BitT(1)), ("parser_error", ir.ErrorT()), ("priority", ir.BitT(3))]))
HT = ir.HeaderT("h_t", (ir.Field("a", B8), ir.Field("b", B8)))
HS = ir.StructT("headers_t", (ir.Field("h", HT),))
MT = ir.StructT("meta_t", ())
L = ir.Loc("hand.p4", 1, 1)


def param(name: str, d: str | None, t: ir.Type) -> ir.Param:
    return ir.Param(name, d, t, next(_uid), L)


def member(base: ir.Expr, name: str) -> ir.Member:
    t = base.type
    assert isinstance(t, (ir.StructT, ir.HeaderT))
    f = t.field(name)
    assert f is not None
    return ir.Member(base, name, f.type, L)


def const(v: int, t: ir.Type = B8) -> ir.Const:
    return ir.Const(v, t, L)


def build(ingress_body: list[ir.Stmt], ing_locals: tuple[object, ...] = (), mk=None) -> ir.Program:
    """A program: parse h, ingress body (given a VarRef builder), emit h."""
    pk = param("pkt", None, ir.ExternT("packet_in"))
    ph, pm, ps = param("h", "out", HS), param("m", "inout", MT), param("sm", "inout", SM)
    h = ir.VarRef(ph, HS, L)
    extract = ir.MethodCall(ir.VarRef(pk, pk.type, L), "extract", (ir.Arg(member(h, "h"), "out", None),), (), ir.VoidT(), L)
    parser = ir.Parser("P", (pk, ph, pm, ps), (), (), {"start": ir.ParserState("start", (ir.CallStmt(extract, L),), ir.Goto("accept"), L)}, loc=L, instance_path="P")

    def ctl(name: str, params: tuple[ir.Param, ...], body: list[ir.Stmt], locals_: tuple[object, ...] = ()) -> ir.Control:
        return ir.Control(name, params, (), locals_, ir.Block(tuple(body), L), loc=L, instance_path=name)

    vc = ctl("VC", (param("h", "inout", HS), param("m", "inout", MT)), [])
    ig_params = (param("h", "inout", HS), param("m", "inout", MT), param("sm", "inout", SM))
    body = mk(ig_params) if mk else ingress_body
    ig = ctl("Ing", ig_params, body, ing_locals)
    eg = ctl("Egr", (param("h", "inout", HS), param("m", "inout", MT), param("sm", "inout", SM)), [])
    cc = ctl("CC", (param("h", "inout", HS), param("m", "inout", MT)), [])
    po, dh = param("pkt", None, ir.ExternT("packet_out")), param("h", "in", HS)
    emit = ir.MethodCall(ir.VarRef(po, po.type, L), "emit", (ir.Arg(member(ir.VarRef(dh, HS, L), "h"), "in", None),), (), ir.VoidT(), L)
    dp = ctl("D", (po, dh), [ir.CallStmt(emit, L)])
    insts = tuple(ir.Instance(b.name, b.name, ir.ControlT(b.name) if isinstance(b, ir.Control) else ir.ParserT(b.name), b, (), loc=L)
                  for b in (parser, vc, ig, eg, cc, dp))
    return ir.Program({}, ("NoError", "PacketTooShort"), (), {}, {}, {}, {}, {}, {},
                      ir.PackageInstance("main", "V1Switch", insts, L))


def test_add_wraps_and_forwards() -> None:
    def mk(ps: tuple[ir.Param, ...]) -> list[ir.Stmt]:
        h = ir.VarRef(ps[0], HS, L)
        sm = ir.VarRef(ps[2], SM, L)
        hh = member(h, "h")
        return [
            ir.Assign(member(sm, "egress_spec"), const(3, B9), L),
            ir.Assign(member(hh, "b"), ir.Binary("+", member(hh, "a"), const(1), B8, L), L),
        ]

    pl = Pipeline(build([], mk=mk))
    assert pl.process(0, bytes([0x10, 0x00, 0xEE])) == [(3, bytes([0x10, 0x11, 0xEE]))]
    assert pl.process(0, bytes([0xFF, 0x00])) == [(3, bytes([0xFF, 0x00]))]
    # too short: h stays invalid, not emitted, the byte is payload; egress_spec still 3
    assert pl.process(0, bytes([0x05])) == [(3, bytes([0x05]))]


def test_table_and_register() -> None:
    reg = ir.Instance("r", "Ing.r", ir.ExternT("register", (B8,)), None, (const(4, B32),), loc=L)
    holder: dict[str, object] = {}

    def mk(ps: tuple[ir.Param, ...]) -> list[ir.Stmt]:
        h = ir.VarRef(ps[0], HS, L)
        sm = ir.VarRef(ps[2], SM, L)
        hh = member(h, "h")
        port = param("port", None, B9)
        act = ir.Action("fwd", "Ing.fwd", (port,), ir.Block((ir.Assign(member(sm, "egress_spec"), ir.VarRef(port, B9, L), L),), L), loc=L)
        noact = ir.Action("NoAction", "NoAction", (), ir.Block((), L), loc=L)
        t = ir.Table("t", "Ing.t", (ir.Key(member(hh, "a"), "exact", "h.h.a"),), (ir.ActionRef(act), ir.ActionRef(noact)),
                     ir.ActionRef(noact), loc=L)
        holder["locals"] = (reg, act, t)
        idx = ir.Cast(B32, member(hh, "a"), L)
        old = member(hh, "b")
        r = ir.InstanceRef(reg, reg.type, L)
        read = ir.MethodCall(r, "read", (ir.Arg(old, "out", None), ir.Arg(idx, "in", None)), (), ir.VoidT(), L)
        write = ir.MethodCall(r, "write", (ir.Arg(idx, "in", None), ir.Arg(ir.Binary("+", old, const(1), B8, L), "in", None)), (), ir.VoidT(), L)
        return [ir.CallStmt(ir.TableApply(t, ir.TableApplyT("t"), L), L), ir.CallStmt(read, L), ir.CallStmt(write, L)]

    prog = build([], mk=mk)
    ig = prog.main.args[2].decl  # type: ignore[union-attr]
    ig.locals = holder["locals"]  # type: ignore[union-attr]
    pl = Pipeline(prog)
    pl.table_insert("t", [KeySpec(2)], "fwd", {"port": 7})
    assert pl.process(0, bytes([2, 0])) == [(7, bytes([2, 0]))]
    assert pl.process(0, bytes([2, 0])) == [(7, bytes([2, 1]))]
    assert pl.process(0, bytes([9, 0])) == [(0, bytes([9, 0]))]  # miss, out-of-range index reads 0
    assert pl.register_read("r") == [0, 0, 2, 0]


def test_unsupported_construct_is_located() -> None:
    def mk(ps: tuple[ir.Param, ...]) -> list[ir.Stmt]:
        return [ir.CallStmt(ir.ExternCall("no_such_extern", (), (), ir.VoidT(), ir.Loc("x.p4", 7, 9)), L)]

    with pytest.raises(UnsupportedError, match=r"x\.p4:7:9: unsupported: extern function no_such_extern"):
        Pipeline(build([], mk=mk))
