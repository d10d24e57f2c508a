"""Expression and l-value code generation: IR expressions to Python source text.

Every value is kept canonical in its slot: ``bit<W>`` in ``[0, 2**W)``, ``int<W>`` in the
two's complement range, ``bool`` as a Python bool, enums as their numeric value (the
member index for non-serializable enums), ``error`` as its BMv2 number. The generated
expressions therefore only wrap where an operation can leave the range.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..frontend import ir
from ..lowering.binary import lower_binary, lower_unary, scalar_operator
from ..lowering.calls import call_value, table_result
from ..lowering.casts import without_enum
from ..lowering.compare import aggregate_equal
from ..lowering.errors import Unsupported
from ..lowering.order import captured, value_of
from ..lowering.places import Place, SlotLayout, resolve_place, scalar_leaves
from ..lowering.types import ERROR_WIDTH, bits, is_scalar
from .gencontext import GenContext
from .layout import field_offset, nslots
from .ranges import Range, arith, shift_right, type_range, union, within

if TYPE_CHECKING:
    from .context import CompileContext


VARBIT = -1  # the width ``flatten`` gives a varbit value: its expression is a (width, value) tuple
SLOTS = SlotLayout(nslots, field_offset)
"""The Python executor's slot layout, for :func:`resolve_place`."""
SMALL_SHIFT = 1024  # a variable shift amount up to this is done inline (a << b stays small)


def span(p: Place) -> str:
    """``a:b`` covering the whole value of ``p`` in the Python slot list."""
    n = nslots(p.type)
    if isinstance(p.base, int):
        return f"{p.base}:{p.base + n}"
    return f"{p.base}:{p.base}+{n}"


def wrap_expr(x: str, width: int, signed: bool) -> str:
    m = (1 << width) - 1
    if signed:
        h = 1 << (width - 1)
        return f"((({x}) + {h}) & {m}) - {h}"
    return f"({x}) & {m}"


class StatementHooks(Protocol):
    """What the expression and extern parts call back into: the statement part
    (``stmtgen.StmtGen``: stores, calls, table applies, header resets; extern calls and
    lookahead it hands on to ``externgen.ExternGen``)."""

    def reset(self, p: Place) -> None:
        """Make the header at ``p`` invalid (its fields unspecified)."""
        ...

    def lookahead_place(self, e: ir.MethodCall) -> Place:
        """The slots a non-scalar ``packet.lookahead<T>()`` is read into."""
        ...

    def method_call(self, e: ir.MethodCall) -> str | None:
        """Emit a method call; the expression of its value (None: it has none)."""
        ...

    def table_apply(self, e: ir.TableApply) -> str:
        """Emit a table apply; the expression of its result."""
        ...

    def function_call(self, e: ir.FunctionCall) -> str | None:
        """Emit a function call; the expression of its value (None: it has none)."""
        ...

    def store(self, lhs: ir.Expr, value: str) -> None:
        """Emit ``lhs = value``."""
        ...

    def extern_call(self, e: ir.ExternCall) -> str | None:
        """Emit an extern call; the expression of its value (None: it has none)."""
        ...


class ExprGen:
    """Generates Python source for expressions of one function body, into the shared
    :class:`GenContext`; calls that need statements go to ``hooks`` (the statement part)."""

    def __init__(self, ctx: GenContext, hooks: StatementHooks) -> None:
        self.ctx = ctx
        self.hooks = hooks
        self.unsupported = ctx.unsupported
        self.pinned = ctx.pinned

    # The lowering helpers read and move the output position through these (see ``BinaryEmitter``).
    @property
    def lines(self) -> list[str]:
        return self.ctx.lines

    @lines.setter
    def lines(self, value: list[str]) -> None:
        self.ctx.lines = value

    @property
    def ind(self) -> int:
        return self.ctx.ind

    @ind.setter
    def ind(self, value: int) -> None:
        self.ctx.ind = value

    # ------------------------------------------------------------------ statement hooks
    # ``resolve_place`` and ``call_value`` are handed this part; the statement part answers.
    def lookahead_place(self, e: ir.MethodCall) -> Place:
        return self.hooks.lookahead_place(e)

    def method_call(self, e: ir.MethodCall) -> str | None:
        return self.hooks.method_call(e)

    def table_apply(self, e: ir.TableApply) -> str:
        return self.hooks.table_apply(e)

    def apply_result(self, r: str, action: bool) -> str:
        """Items 2 and 3 of the lookup tuple ``r``: the action number and the hit flag."""
        return f"{r}[2]" if action else f"{r}[3]"

    def function_call(self, e: ir.FunctionCall) -> str | None:
        return self.hooks.function_call(e)

    def extern_call(self, e: ir.ExternCall) -> str | None:
        return self.hooks.extern_call(e)

    # ------------------------------------------------------------------ helpers
    def simple(self, x: str) -> str:
        """``x`` if it is cheap and side-effect free to evaluate twice, else a temp holding it."""
        if x.isidentifier() or x.lstrip("-").isdigit() or (x.startswith("S[") and x.endswith("]") and x[2:-1].isdigit()):
            return x
        t = self.ctx.tmp()
        self.ctx.emit(f"{t} = {x}")
        return t

    def oob(self, e: ir.Expr) -> str:
        """Statement raising a stack index error: StackOutOfBounds in the parser."""
        if self.ctx.in_parser:
            return "raise _PErr(3)"
        return f"raise _AssertFail({'header stack index out of bounds at ' + str(e.loc)!r})"

    def oob_place(self, bad: str, pos: str, elem: ir.Type) -> Place:
        """A stack element at a run-time index outside a parser: out of bounds (``bad``),
        it is a scratch element reset to an invalid header, so a read gives an
        unspecified value and a write changes nothing (P4_16 8.18; p4c's HSIndexSimplifier
        drops such accesses) instead of failing the packet."""
        scratch = Place(self.ctx.prog.oob_scratch(elem), elem)
        t = self.ctx.tmp()
        self.ctx.emit(f"if {bad}:")
        self.ctx.ind += 1
        self.ctx.emit(f"{t} = {scratch.base}")
        self.hooks.reset(scratch)
        self.ctx.ind -= 1
        self.ctx.emit(f"else: {t} = {pos}")
        return Place(t, elem)

    # ------------------------------------------------------------------ places
    def place(self, e: ir.Expr) -> Place:
        """The slot range an l-value or aggregate expression denotes."""
        if self.ctx.place_memo is not None and self.ctx.place_memo[0] is e:
            return self.ctx.place_memo[1]
        return resolve_place(e, self, SLOTS)

    def var_slot(self, e: ir.VarRef) -> int | None:
        if e.decl.uid in self.ctx.locals:
            return None
        return self.ctx.prog.layout.var(e.decl.uid, e.decl.type, e.decl.name)

    def stack_index(self, e: ir.StackElem, base: Place, esz: int) -> Place:
        st = e.base.type
        assert isinstance(st, ir.StackT)
        idx = self.simple(self.expr(e.index))
        signed = isinstance(e.index.type, ir.BitT) and e.index.type.signed
        bad = f"{'not 0 <= ' if signed else ''}{idx} {'<' if signed else '>='} {st.size}"
        pos = f"{base.at(1)}+{idx}*{esz}" if esz != 1 else f"{base.at(1)}+{idx}"
        if self.ctx.in_parser:
            self.ctx.emit(f"if {bad}: {self.oob(e)}")
            return Place(pos, st.elem)
        return self.oob_place(bad, pos, st.elem)

    def stack_end(self, e: ir.StackProp, base: Place, esz: int) -> Place:
        st = e.base.type
        assert isinstance(st, ir.StackT)
        t = self.ctx.tmp()
        if e.prop == "next":
            self.ctx.emit(f"{t} = S[{base.at()}]")
            self.ctx.emit(f"if {t} >= {st.size}: {self.oob(e)}")
        else:
            self.ctx.emit(f"{t} = S[{base.at()}] - 1")
            if not self.ctx.in_parser:
                return self.oob_place(f"{t} < 0", f"{base.at(1)}+{t}*{esz}", st.elem)
            self.ctx.emit(f"if {t} < 0: {self.oob(e)}")
        return Place(f"{base.at(1)}+{t}*{esz}", st.elem)

    # ------------------------------------------------------------------ value ranges
    def vrange(self, e: ir.Expr) -> Range | None:
        """Bounds of the value that ``self.expr(e)`` computes (None: unknown)."""
        hit = self.ctx._vr.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        r = self._vrange(e)
        self.ctx._vr[id(e)] = (e, r)
        return r

    def _vrange(self, e: ir.Expr) -> Range | None:
        tr = type_range(e.type)
        if tr is None:
            return None
        if isinstance(e, ir.Const) and not isinstance(e.value, bool):
            v = int(e.value)
            return (v, v) if tr[0] <= v <= tr[1] else tr
        if isinstance(e, ir.VarRef):
            return self.ctx.ranges.get(e.decl.uid, tr)
        if isinstance(e, ir.Slice):
            return 0, (1 << (e.hi - e.lo + 1)) - 1
        if isinstance(e, ir.Cast):
            src = self.vrange(e.e) if isinstance(e.e.type, (ir.BitT, ir.IntT)) else None
            return src if within(src, tr) else tr
        if isinstance(e, ir.Mux):
            return union(self.vrange(e.then), self.vrange(e.else_)) or tr
        if isinstance(e, ir.Binary) and isinstance(e.type, ir.BitT):
            raw = self.raw_range(e)
            return raw if within(raw, tr) else tr
        return tr

    def raw_range(self, e: ir.Binary) -> Range | None:
        """Bounds of the unwrapped result of ``+ - * & >>`` on bit<W>/int<W> operands."""
        a, b = self.vrange(e.left), self.vrange(e.right)
        if a is None or b is None:
            return None
        if e.op in ("+", "-", "*"):
            return arith(e.op, a, b)
        if e.op == ">>":
            return shift_right(a, int(e.right.value) if isinstance(e.right, ir.Const) else None)
        if e.op == "&" and (a[0] >= 0 or b[0] >= 0):
            return 0, min(x[1] for x in (a, b) if x[0] >= 0)
        return None

    def expr_mod(self, e: ir.Expr, w: int) -> str:
        """Code for a value congruent to ``e``'s modulo ``2**w``, not necessarily canonical:
        the operand of an operation that wraps to ``w`` bits anyway, so the inner wraps of
        ``+ - *`` and widening-or-same-width casts can be left out (masking once at the end
        of an expression tree)."""
        if self.pinned.get(e) is not None:
            return self.expr(e)
        if isinstance(e, ir.Binary) and e.op in ("+", "-", "*") and isinstance(e.type, ir.BitT) \
                and e.type.width >= w:
            return f"({self.expr_mod(e.left, w)} {e.op} {self.expr_mod(e.right, w)})"
        if isinstance(e, ir.Cast) and isinstance(e.type, ir.BitT) and e.type.width >= w \
                and isinstance(e.e.type, (ir.BitT, ir.IntT)):
            return self.expr_mod(e.e, w)
        return self.expr(e)

    def wrapped(self, e: ir.Binary, w: int, signed: bool) -> str:
        """``e`` (``+ - *``) wrapped to ``bit<w>``/``int<w>``, the wrap left out when the
        exact result always fits."""
        if within(self.raw_range(e), type_range(e.type)):
            return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"
        x = f"{self.expr_mod(e.left, w)} {e.op} {self.expr_mod(e.right, w)}"
        return f"({wrap_expr(x, w, signed)})"

    # ------------------------------------------------------------------ r-values
    def expr(self, e: ir.Expr) -> str:
        """Python expression text for the scalar value of ``e``."""
        return value_of(self, e)

    def x_Const(self, e: ir.Const) -> str:
        if isinstance(e.value, bool) or isinstance(e.type, ir.BoolT):
            return "True" if e.value else "False"
        return repr(int(e.value))

    def x_ErrorMember(self, e: ir.ErrorMember) -> str:
        return str(self.ctx.prog.error_number(e.name, e))

    def x_EnumMember(self, e: ir.EnumMember) -> str:
        if e.enum.values is not None:
            return repr(e.enum.value_of(e.member))
        return str(e.enum.members.index(e.member))

    def x_VarRef(self, e: ir.VarRef) -> str:
        name = self.ctx.locals.get(e.decl.uid)
        if name is not None:
            return name
        if not is_scalar(e.type):
            raise self.unsupported(f"aggregate '{e.decl.name}' used as a scalar", e)
        return f"S[{self.place(e).at()}]"

    def x_Member(self, e: ir.Member) -> str:
        if isinstance(e.base, ir.TableApply):
            return table_result(e, self)
        return f"S[{self.place(e).at()}]"

    def x_StackElem(self, e: ir.StackElem) -> str:
        return f"S[{self.place(e).at()}]"

    def x_StackProp(self, e: ir.StackProp) -> str:
        st = e.base.type
        assert isinstance(st, ir.StackT)
        if e.prop == "size":
            return str(st.size)
        if e.prop == "lastIndex":
            return f"((S[{self.place(e.base).at()}] - 1) & 0xFFFFFFFF)"
        raise self.unsupported(f"stack property {e.prop!r} as a value", e)

    def x_Slice(self, e: ir.Slice) -> str:
        base = self.expr(e.base)
        m = (1 << (e.hi - e.lo + 1)) - 1
        return f"(({base}) >> {e.lo} & {m})" if e.lo else f"(({base}) & {m})"

    def x_Unary(self, e: ir.Unary) -> str:
        return lower_unary(self, e)

    def scalar_unary(self, e: ir.Unary, x: str) -> str:
        if isinstance(e.type, ir.IntT):
            return f"({e.op}{x})"
        w, s = bits(e.type)
        if e.op == "~":
            return f"(~{x})" if s else f"({x} ^ {(1 << w) - 1})"
        return f"({wrap_expr('-' + x, w, s)})"

    def x_Binary(self, e: ir.Binary) -> str:
        return lower_binary(self, e)

    def read_left(self, e: ir.Expr) -> str:
        t = self.ctx.tmp()
        self.ctx.emit(f"{t} = {self.expr(e)}")
        return t

    def short_circuit(self, op: str, a: str, b: str, pre: list[str]) -> str:
        if not pre:
            return f"({a} {'and' if op == '&&' else 'or'} {b})"
        t = self.ctx.tmp()
        self.ctx.emit(f"{t} = {a}")
        self.ctx.emit(f"if {'' if op == '&&' else 'not '}{t}:")
        self.ctx.lines.extend(pre)
        self.ctx.emit(f"    {t} = {b}")
        return t

    def negate(self, cond: str) -> str:
        return f"(not {cond})"

    def scalar_binary(self, e: ir.Binary) -> str:
        op = e.op
        rt = e.type
        if op in ("+", "-", "*") and isinstance(rt, ir.BitT):
            return self.wrapped(e, rt.width, rt.signed)
        a, b = self.expr(e.left), self.expr(e.right)
        if op in ("==", "!=") and isinstance(e.left.type, ir.VarBitT):
            # simple_switch compares a varbit's value only (0x1122 over 16 bits equals 0x1122
            # over 24), where the P4 spec also wants equal widths; innet follows simple_switch
            return f"({a}[1] {op} {b}[1])"
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return f"({a} {op} {b})"
        if isinstance(rt, ir.IntT):
            pyop = {"/": "//"}.get(op, op)
            return f"({a} {pyop} {b})"
        w, s = bits(rt)
        return scalar_operator(self, e, a, b, w, s)

    zero = "0"

    def arith(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        return f"({wrap_expr(f'{a} {e.op} {b}', w, s)})"

    def shift_left(self, e: ir.Binary, a: str, b: str, w: int, s: bool, n: int | None) -> str:
        if n is not None:
            return f"({wrap_expr(f'{self.expr_mod(e.left, w)} << {n}', w, s)})"
        rb = self.vrange(e.right)
        if rb is not None and rb[1] <= SMALL_SHIFT:
            # shifts of w bits or more leave no low bits: the wrap yields 0 as P4 asks
            return f"({wrap_expr(f'{a} << {b}', w, s)})"
        return f"_shl({a}, {b}, {w}, {int(s)})"

    def shift_right(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        if isinstance(e.right, ir.Const) and int(e.right.value) == 0:
            return a
        return f"({a} >> {b})"

    def div_mod(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        pyop = "//" if e.op == "/" else "%"
        if isinstance(e.right, ir.Const) and int(e.right.value) != 0:
            return f"({a} {pyop} {b})"
        return f"_{'div' if e.op == '/' else 'mod'}({a}, {b})"

    def concat(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        wl, sl = bits(e.left.type)
        wr, sr = bits(e.right.type)
        left = f"({a} & {(1 << wl) - 1})" if sl else a
        right = f"({b} & {(1 << wr) - 1})" if sr else b
        x = f"({left} << {wr} | {right})"
        return f"({wrap_expr(x, w, True)})" if s else x

    def saturating(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        sign = "+" if e.op == "|+|" else "-"
        if s:
            return f"min(max({a} {sign} {b}, {-(1 << (w - 1))}), {(1 << (w - 1)) - 1})"
        return f"min({a} + {b}, {(1 << w) - 1})" if sign == "+" else f"max({a} - {b}, 0)"

    def cond_free(self, e: ir.Expr) -> str:
        """Right operand of && / || / ?: : must not need hoisted statements (short-circuit)."""
        n = len(self.ctx.lines)
        x = self.expr(e)
        if len(self.ctx.lines) != n:
            raise self.unsupported("a call with side effects on the short-circuited side of &&, || or ?:", e)
        return x

    def x_Cast(self, e: ir.Cast) -> str:
        src, dst = e.e.type, e.type
        if isinstance(dst, ir.BitT) and isinstance(src, (ir.BitT, ir.IntT)):
            r = self.vrange(e.e)
            w = dst.width
            if within(r, type_range(dst)):
                return self.expr(e.e)  # the value is representable: the cast keeps it
            if not dst.signed:
                return f"({self.expr_mod(e.e, w)} & {(1 << w) - 1})"
            if within(r, (0, (1 << w) - 1)):
                h = 1 << (w - 1)
                return f"(({self.expr(e.e)} ^ {h}) - {h})"  # two's complement of a w-bit value
            return f"({wrap_expr(self.expr_mod(e.e, w), w, True)})"
        return self.cast(self.expr(e.e), src, dst, e)

    def cast(self, x: str, src: ir.Type, dst: ir.Type, node: Any) -> str:
        if src == dst:
            return x
        if isinstance(dst, ir.BoolT):
            return f"({x} != 0)" if not isinstance(src, ir.BoolT) else x
        if isinstance(dst, ir.EnumT) or isinstance(src, ir.EnumT):
            return self.cast(x, *without_enum(src, dst, node, self.unsupported), node)
        if isinstance(dst, ir.BitT):
            w, s = dst.width, dst.signed
            if isinstance(src, ir.BoolT):
                return f"int({x})"
            if isinstance(src, ir.IntT):
                return f"({wrap_expr(x, w, s)})"
            if isinstance(src, ir.BitT):
                if not s:
                    if src.signed or src.width > w:
                        return f"({x} & {(1 << w) - 1})"
                    return x
                if src.signed and src.width <= w:
                    return x
                if not src.signed and src.width < w:
                    return x
                return f"({wrap_expr(x, w, True)})"
        if isinstance(dst, ir.IntT):
            return x
        raise self.unsupported(f"cast from {src} to {dst}", node)

    def x_Mux(self, e: ir.Mux) -> str:
        c = self.expr(e.cond)
        self.ctx.ind += 1
        a, pre_a = captured(self.ctx.lines, lambda: self.expr(e.then))
        b, pre_b = captured(self.ctx.lines, lambda: self.expr(e.else_))
        self.ctx.ind -= 1
        if not pre_a and not pre_b:
            return f"({a} if {c} else {b})"
        t = self.ctx.tmp()
        self.ctx.emit(f"if {c}:")
        self.ctx.lines.extend(pre_a)
        self.ctx.emit(f"    {t} = {a}")
        self.ctx.emit("else:")
        self.ctx.lines.extend(pre_b)
        self.ctx.emit(f"    {t} = {b}")
        return t

    def agg_equal(self, a: Place, b: Place, t: ir.Type, node: Any) -> str:
        """Equality of two header/struct/union/stack values."""
        return aggregate_equal(a, b, t, node, self, SLOTS)

    def header_equal(self, a: Place, b: Place, t: ir.HeaderT) -> str:
        n = len(t.fields)
        fields = f"S[{a.at(1)}:{a.at(1 + n)}] == S[{b.at(1)}:{b.at(1 + n)}]" if n else "True"
        return f"(S[{a.at()}] == S[{b.at()}] and (not S[{a.at()}] or {fields}))"

    def slot_equal(self, a: str, b: str, t: ir.Type) -> str:
        return f"S[{a}] == S[{b}]"

    def conjunction(self, parts: list[str]) -> str:
        return "(" + " and ".join(parts or ["True"]) + ")"

    def x_MethodCall(self, e: ir.MethodCall) -> str:
        return call_value(e, self)

    x_TableApply = x_FunctionCall = x_ExternCall = x_MethodCall

    # ------------------------------------------------------------------ field lists
    def flatten(self, e: ir.Expr) -> list[tuple[str, int]]:
        """Scalar (value expression, width) pairs of a field list / struct / header value."""
        if isinstance(e, ir.ListExpr):
            out: list[tuple[str, int]] = []
            for item in e.elems:
                out += self.flatten(item)
            return out
        if isinstance(e, ir.StructInit):
            out = []
            for _, item in e.fields:
                out += self.flatten(item)
            return out
        t = e.type
        if isinstance(t, ir.VarBitT):
            return [(self.expr(e), VARBIT)]
        if is_scalar(t):
            xs = self.expr(e)
            w, _ = bits(t)
            if isinstance(t, ir.BitT) and t.signed:
                xs = f"({xs} & {(1 << w) - 1})"
            elif isinstance(t, ir.BoolT):
                xs = f"int({xs})"
            return [(xs, w)]
        return self.flatten_place(self.place(e), t)

    def flatten_place(self, p: Place, t: ir.Type) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for f, in_header in scalar_leaves(p, t, SLOTS, self.unsupported, None):
            x = f"S[{f.at()}]"
            if isinstance(f.type, ir.VarBitT):
                out.append((x, VARBIT))
                continue
            w, s = bits(f.type)
            if s:
                x = f"({x} & {(1 << w) - 1})"
            elif isinstance(f.type, ir.BoolT) and not in_header:
                x = f"int({x})"
            out.append((x, w))
        return out


def pack_expr(fields: list[tuple[str, int]]) -> tuple[str, int]:
    """One Python int expression concatenating the fields MSB first, and its width
    (fixed-width fields only; see ``vl_parts`` for lists with a varbit)."""
    parts = []
    total = sum(w for _, w in fields)
    shift = total
    for x, w in fields:
        shift -= w
        parts.append(f"({x} << {shift})" if shift else f"{x}")
    return (" | ".join(parts) if parts else "0"), total


def vl_parts(fields: list[tuple[str, int]]) -> str:
    """A tuple expression of ``(width, value)`` pairs for ``_vl_bytes``: fields of a list
    in which some width (a varbit's) is only known at run time."""
    items = [x if w == VARBIT else f"({w}, {x})" for x, w in fields]
    return "(" + "".join(i + ", " for i in items) + ")"
