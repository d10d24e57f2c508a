"""The lowering both executors share (``innet.switch.lowering``), checked on hand-built IR
with the Python executor's slot layout: each decision is made once here, so a wrong one
would show in both executors alike and the differential tests could not see it."""

from __future__ import annotations

import pytest

from innet.switch.frontend import ir
from innet.switch.lowering.args import call_arg, const_int, field_slots
from innet.switch.lowering.branches import switch_branches
from innet.switch.lowering.binary import lower_unary, scalar_operator
from innet.switch.lowering.calls import has_call, subparser_bindings, table_result
from innet.switch.lowering.casts import without_enum
from innet.switch.lowering.compare import aggregate_equal
from innet.switch.lowering.errors import Unsupported
from innet.switch.lowering.externs import Clone, FieldList, Hash, NoOp, Recirculate, lower_extern_call
from innet.switch.lowering.methods import emit_value
from innet.switch.lowering.order import Pinned, captured, reads_left_first, value_of
from innet.switch.lowering.places import Place, members, resolve_place, scalar_leaves
from innet.switch.pipeline.errors import UnsupportedError
from innet.switch.pipeline.exprgen import SLOTS

LOC = ir.Loc("prog.p4", 7, 3)
B8, B16 = ir.BitT(8), ir.BitT(16)
H = ir.HeaderT("h_t", (ir.Field("a", B8), ir.Field("b", B16)))
U = ir.HeaderUnionT("u_t", (ir.Field("x", H), ir.Field("y", H)))
S = ir.StructT("s_t", (ir.Field("f", B8), ir.Field("h", H), ir.Field("u", U), ir.Field("st", ir.StackT(H, 2))))
unsupported = Unsupported(UnsupportedError)


def var(name: str, t: ir.Type, uid: int) -> ir.VarRef:
    return ir.VarRef(ir.VarDecl(name, t, uid), t, LOC)


class Emitter:
    """Records what place resolution hands to an executor: variables at fixed slots."""

    def __init__(self, slots: dict[int, int | None]) -> None:
        self.slots = slots
        self.unsupported = unsupported
        self.runtime: list[str] = []

    def place(self, e: ir.Expr) -> Place:
        return resolve_place(e, self, SLOTS)

    def var_slot(self, e: ir.VarRef) -> int | None:
        return self.slots[e.decl.uid]

    def stack_index(self, e: ir.StackElem, base: Place, esz: int) -> Place:
        self.runtime.append(f"index {base.base} {esz}")
        return Place("i", e.type)

    def stack_end(self, e: ir.StackProp, base: Place, esz: int) -> Place:
        self.runtime.append(f"{e.prop} {base.base} {esz}")
        return Place("n", e.type)

    def lookahead_place(self, e: ir.MethodCall) -> Place:
        raise AssertionError("no lookahead here")


def test_a_field_of_a_struct_variable_is_its_offset_in_the_layout() -> None:
    s = var("s", S, 1)
    out = Emitter({1: 100})
    h = ir.Member(s, "h", H, LOC)
    assert resolve_place(ir.Member(h, "b", B16, LOC), out, SLOTS) == Place(100 + 1 + 2, B16)


def test_a_union_member_knows_where_its_siblings_are() -> None:
    s = var("s", S, 1)
    u = ir.Member(s, "u", U, LOC)
    p = resolve_place(ir.Member(u, "y", H, LOC), Emitter({1: 0}), SLOTS)
    x = resolve_place(ir.Member(u, "x", H, LOC), Emitter({1: 0}), SLOTS)
    assert p.union_siblings == (x.base,) and p.base == x.base + SLOTS.nslots(H)


def test_a_constant_stack_index_is_resolved_and_a_runtime_one_handed_to_the_emitter() -> None:
    s = var("s", S, 1)
    st = ir.Member(s, "st", ir.StackT(H, 2), LOC)
    out = Emitter({1: 0})
    base = resolve_place(st, out, SLOTS).base
    assert isinstance(base, int)
    one = resolve_place(ir.StackElem(st, ir.Const(1, B8), H, LOC), out, SLOTS)
    assert one.base == base + 1 + SLOTS.nslots(H)
    resolve_place(ir.StackElem(st, var("i", B8, 2), H, LOC), out, SLOTS)
    assert out.runtime == [f"index {base} {SLOTS.nslots(H)}"]


def test_an_out_of_range_stack_index_and_action_data_are_refused_with_their_location() -> None:
    st = var("st", ir.StackT(H, 2), 1)
    with pytest.raises(UnsupportedError, match=r"^prog.p4:7:3: unsupported: stack index 2 out of range 0..1$"):
        resolve_place(ir.StackElem(st, ir.Const(2, B8), H, LOC), Emitter({1: 0}), SLOTS)
    with pytest.raises(UnsupportedError, match=r"'d' \(action data\) used as an l-value"):
        resolve_place(var("d", B8, 3), Emitter({3: None}), SLOTS)


def test_members_of_a_stack_are_its_elements_after_the_next_index() -> None:
    elems = members(Place(10, ir.StackT(H, 2)), ir.StackT(H, 2), SLOTS)
    assert [m.base for m in elems] == [11, 11 + SLOTS.nslots(H)]


def test_field_slots_flatten_nested_lists_and_refuse_runtime_places() -> None:
    a, b = var("a", B8, 1), var("b", H, 2)
    out = Emitter({1: 5, 2: 20})
    lst = ir.ListExpr((a, ir.ListExpr((b,), ir.TupleT((H,)), LOC)), ir.TupleT((B8, H)), LOC)
    assert field_slots(lst, out.place, SLOTS.nslots, unsupported) == (5, *range(20, 20 + SLOTS.nslots(H)))
    out.slots[1] = None
    with pytest.raises(UnsupportedError):
        field_slots(a, out.place, SLOTS.nslots, unsupported)


def extern(name: str, *exprs: ir.Expr, named: dict[int, str] | None = None) -> ir.ExternCall:
    names = named or {}
    args = tuple(ir.Arg(x, None, ir.Param(names[i], "in", x.type, 90 + i) if i in names else None)
                 for i, x in enumerate(exprs))
    return ir.ExternCall(name, args, (), ir.VoidT(), LOC)


def test_an_argument_is_found_by_its_parameter_name_before_its_position() -> None:
    x, y = ir.Const(1, B8), ir.Const(2, B8)
    assert call_arg(extern("f", x, y, named={0: "max", 1: "base"}), "base", 0) is y
    assert call_arg(extern("f", x, y), "base", 1) is y
    with pytest.raises(UnsupportedError, match="non-constant field list index"):
        const_int(var("i", B8, 1), unsupported)


def test_extern_calls_lower_to_one_operation_each() -> None:
    r, c, session = var("r", B16, 1), ir.Const(3, B8), ir.Const(5, ir.BitT(32))
    op = lower_extern_call(extern("hash", r, c, c, r, ir.Const(0, B16)), unsupported)
    assert isinstance(op, Hash) and op.result is r and op.base is c and op.data is r
    plain = lower_extern_call(extern("clone", c, session), unsupported)
    assert isinstance(plain, Clone) and plain.session is session and plain.fields == FieldList()
    clone = lower_extern_call(extern("clone_preserving_field_list", c, c, ir.Const(2, B8)), unsupported)
    assert isinstance(clone, Clone) and clone.fields == FieldList(index=2)
    rec = lower_extern_call(extern("recirculate", r), unsupported)
    assert isinstance(rec, Recirculate) and not rec.resubmit and rec.fields == FieldList(data=r)
    assert lower_extern_call(extern("resubmit"), unsupported) == Recirculate(True, FieldList())
    assert lower_extern_call(extern("static_assert", c), unsupported) == NoOp()
    assert lower_extern_call(extern("no_such_extern"), unsupported) is None


def test_switch_cases_without_a_body_fall_into_the_next_and_default_ends_the_chain() -> None:
    v = var("v", B8, 1)
    one, two, three = (ir.Const(i, B8, LOC) for i in (1, 2, 3))
    body = ir.Block((), LOC)
    s = ir.Switch(v, (ir.SwitchCase((one,), None, LOC), ir.SwitchCase((two,), body, LOC),
                      ir.SwitchCase((ir.DefaultKey(),), body, LOC), ir.SwitchCase((three,), body, LOC)), LOC)
    br = switch_branches(s, unsupported)
    assert [(b.labels, b.default) for b in br] == [((one, two), False), ((), True)]


class Text:
    """Equality text of a toy language: records what the walk asks for."""

    unsupported = unsupported

    def header_equal(self, a: Place, b: Place, t: ir.HeaderT) -> str:
        return f"H{a.base}={b.base}"

    def slot_equal(self, a: str, b: str, t: ir.Type) -> str:
        return f"{a}={b}"

    def conjunction(self, parts: list[str]) -> str:
        return "(" + "&".join(parts or ["T"]) + ")"


def test_aggregate_equality_walks_fields_and_elements_in_layout_order() -> None:
    n = SLOTS.nslots(H)
    t = ir.StructT("p_t", (ir.Field("f", B8), ir.Field("st", ir.StackT(H, 2))))
    assert aggregate_equal(Place(0, t), Place(50, t), t, None, Text(), SLOTS) == \
        f"(0=50&(H2=52&H{2 + n}={52 + n}))"
    with pytest.raises(UnsupportedError, match="comparison of bit<8> values"):
        aggregate_equal(Place(0, B8), Place(1, B8), B8, None, Text(), SLOTS)


def test_a_left_operand_is_read_first_only_when_a_call_on_the_right_may_write_it() -> None:
    a = var("a", B8, 1)
    call = extern("f", a)
    assert has_call(ir.Binary("+", a, call, B8)) and reads_left_first(ir.Binary("+", a, call, B8))
    assert not reads_left_first(ir.Binary("+", a, ir.Const(1, B8), B8))
    assert not reads_left_first(ir.Binary("&&", a, call, ir.BoolT()))
    pins = Pinned()
    with pins.holding(a, "_t1"):
        assert pins.get(a) == "_t1" and pins.get(var("a", B8, 1)) is None
    assert pins.get(a) is None


def test_scalar_leaves_are_header_fields_then_struct_fields_in_layout_order() -> None:
    t = ir.StructT("p_t", (ir.Field("h", H), ir.Field("f", ir.BoolT())))
    leaves = scalar_leaves(Place(0, t), t, SLOTS, unsupported, None)
    assert [(p.base, p.type, in_header) for p, in_header in leaves] == \
        [(1, B8, True), (2, B16, True), (SLOTS.nslots(H), ir.BoolT(), False)]
    with pytest.raises(UnsupportedError, match="field list element of type bit<8>"):
        scalar_leaves(Place(0, B8), B8, SLOTS, unsupported, None)


def test_a_cast_goes_through_a_serializable_enum_and_refuses_any_other() -> None:
    e = ir.EnumT("E", ("A",), B8)
    assert without_enum(e, B16, None, unsupported) == (B8, B16)
    assert without_enum(B16, e, None, unsupported) == (B16, B8)
    with pytest.raises(UnsupportedError, match="cast to non-serializable enum"):
        without_enum(B8, ir.EnumT("F", ("A",)), None, unsupported)


def test_captured_takes_back_the_lines_an_arm_emitted() -> None:
    lines = ["keep"]

    def arm() -> str:
        lines.append("prepare")
        return "value"

    assert captured(lines, arm) == ("value", ["prepare"]) and lines == ["keep"]


class Ops:
    """Operator text of a toy language: each family the lowering picks, by name."""

    unsupported = unsupported
    zero = "ZERO"

    def __init__(self) -> None:
        self.pinned = Pinned()

    def x_Const(self, e: ir.Const) -> str:
        return f"c{int(e.value)}"

    def x_VarRef(self, e: ir.VarRef) -> str:
        return e.decl.name

    def expr(self, e: ir.Expr) -> str:
        return value_of(self, e)

    def negate(self, cond: str) -> str:
        return f"NOT {cond}"

    def scalar_unary(self, e: ir.Unary, x: str) -> str:
        return f"{e.op}{x}"

    def arith(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        return f"arith {e.op} {w}"

    def shift_left(self, e: ir.Binary, a: str, b: str, w: int, s: bool, n: int | None) -> str:
        return f"shl {n}"

    def shift_right(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        return "shr"

    def div_mod(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        return f"divmod {e.op}"

    def concat(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        return "concat"

    def saturating(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        return f"sat {e.op}"

    def table_apply(self, e: ir.TableApply) -> str:
        return "r"

    def apply_result(self, r: str, action: bool) -> str:
        return f"{r}.action" if action else f"{r}.hit"


def test_an_operator_goes_to_its_family_and_a_constant_shift_past_the_width_is_zero() -> None:
    a, ops = var("a", B8, 1), Ops()

    def op(o: str, right: ir.Expr) -> str:
        return scalar_operator(ops, ir.Binary(o, a, right, B8, LOC), "A", "B", 8, False)

    assert [op(o, a) for o in ("-", "^", "<<", ">>", "%", "++", "|-|")] == \
        ["arith - 8", "(A ^ B)", "shl None", "shr", "divmod %", "concat", "sat |-|"]
    assert op("<<", ir.Const(3, B8)) == "shl 3" and op("<<", ir.Const(8, B8)) == "ZERO"
    with pytest.raises(UnsupportedError, match="binary operator '<=>'"):
        op("<=>", a)


def test_a_pinned_operand_reads_as_its_temporary_and_logical_not_is_the_negation() -> None:
    a, ops = var("a", ir.BoolT(), 1), Ops()
    assert lower_unary(ops, ir.Unary("!", a, ir.BoolT())) == "NOT a"
    with ops.pinned.holding(a, "_t1"):
        assert lower_unary(ops, ir.Unary("~", a, B8)) == "~_t1"
    with pytest.raises(UnsupportedError, match="expression ListExpr"):
        value_of(ops, ir.ListExpr((), ir.TupleT(()), LOC))


def test_a_table_miss_is_the_negation_of_its_hit() -> None:
    t = ir.Table("t", "c.t", (), (), ir.ActionRef(None))  # type: ignore[arg-type]  # no action is read
    applied = ir.TableApply(t, ir.TableApplyT("t"), LOC)
    ops = Ops()
    got = [table_result(ir.Member(applied, m, ir.BoolT(), LOC), ops) for m in ("hit", "miss", "action_run")]
    assert got == ["r.hit", "NOT r.hit", "r.action"]
    with pytest.raises(UnsupportedError, match="table apply result member 'size'"):
        table_result(ir.Member(applied, "size", B8, LOC), ops)


class Deparser(Emitter):
    """Records which headers an ``emit`` writes, in order."""

    def __init__(self, slots: dict[int, int | None]) -> None:
        super().__init__(slots)
        self.out: list[str] = []

    def emit_varbit_header(self, p: Place, t: ir.HeaderT, at: object) -> None:
        self.out.append(f"varbit {t.name}@{p.base}")

    def emit_header(self, p: Place, t: ir.HeaderT, at: object) -> None:
        self.out.append(f"{t.name}@{p.base}")


def test_an_emit_writes_an_aggregates_headers_in_layout_order_and_refuses_partial_bytes() -> None:
    out = Deparser({})
    t = ir.StructT("p_t", (ir.Field("f", B8), ir.Field("h", H), ir.Field("st", ir.StackT(H, 2))))
    emit_value(out, Place(0, t), t, None, SLOTS)
    n = SLOTS.nslots(H)
    assert out.out == ["h_t@1", f"h_t@{2 + n}", f"h_t@{2 + 2 * n}"]
    odd = ir.HeaderT("odd_t", (ir.Field("a", ir.BitT(12)),))
    with pytest.raises(UnsupportedError, match="emit of header odd_t of 12 bits"):
        emit_value(out, Place(0, odd), odd, None, SLOTS)
    with pytest.raises(UnsupportedError, match="emit of bit<8>"):
        emit_value(out, Place(0, B8), B8, None, SLOTS)


class SubparserCall(Emitter):
    """Records what binding a sub-parser's arguments emits."""

    def __init__(self, slots: dict[int, int | None], unaliased: frozenset[int] = frozenset()) -> None:
        super().__init__(slots)
        self.unaliased = unaliased
        self.out: list[str] = []

    def reset(self, p: Place) -> None:
        self.out.append(f"reset {p.base}")

    def copy_in_param(self, prm: ir.Param, a: ir.Expr) -> None:
        self.out.append(f"copy {prm.name}")

    def copy_unaliased(self, prm: ir.Param, a: ir.Expr) -> bool:
        return isinstance(a, ir.VarRef) and a.decl.uid in self.unaliased


def test_a_subparser_aliases_its_argument_slots_and_copies_scalar_inputs() -> None:
    x, h, loc = var("x", B8, 1), var("h", H, 2), var("l", H, 3)
    params = (ir.Param("px", "in", B8, 11), ir.Param("ph", "out", H, 12), ir.Param("pl", "inout", H, 13),
              ir.Param("pk", None, ir.ExternT("packet_in"), 14))
    p = ir.Parser("sub", params, (), (), {})
    call = ir.MethodCall(var("s", ir.VoidT(), 9), "apply", tuple(ir.Arg(a, None, None) for a in (x, h, loc)), (),
                         ir.VoidT(), LOC)
    out = SubparserCall({1: 4, 2: 20, 3: 40}, unaliased=frozenset({3}))
    bindings, copied = subparser_bindings(p, call, out)
    assert bindings == {12: 20} and copied == [(params[2], loc)] and out.out == ["copy px", "reset 20"]
    short = ir.MethodCall(call.target, "apply", call.args[:1], (), ir.VoidT(), LOC)
    with pytest.raises(UnsupportedError, match="sub-parser argument ph left out"):
        subparser_bindings(p, short, out)
