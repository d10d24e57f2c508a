"""Code generation for values wider than 64 bits (a mixin of ``cgen.Gen``).

Why a mixin: the generator's 64-bit paths stay as they are (same C, same speed); each
place where a wide value can appear asks :func:`wide.wide_width` and hands the wide case
to a method here, which emits calls of the ``w_*`` helpers (:data:`wide.WIDE_RUNTIME`)
on ``wv`` values. The python executor is the reference for every operation: its Python
ints are exact, these helpers compute the same W-bit patterns.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..frontend import ir
from ..lowering.args import call_arg
from ..lowering.errors import Unsupported
from ..lowering.places import Place
from .wide import limbs, split, wide_width, word_bits



class WideUnit(Protocol):
    """What the wide-value generator needs of ``cgen.Unit`` (a protocol, so that the two
    modules do not import each other)."""

    wk: int
    """Limbs of the C ``wv`` type."""

    def var(self, uid: int, t: ir.Type, name: str, loc: Any) -> int: ...


class GenHooks(Protocol):
    """What the wide-value half needs of ``cgen.Gen``, the generator it is mixed into (a
    protocol, so that the two modules do not import each other)."""

    u: WideUnit
    ntmp: int
    loops: list[int]
    """Labels of the enclosing loops (``break``/``continue`` targets)."""

    def emit(self, line: str) -> None:
        """Append one line of C."""
        ...

    def expr(self, e: ir.Expr) -> str:
        """The C expression of ``e`` (emitting what it needs first)."""
        ...

    unsupported: Unsupported
    """Builds the error refusing ``node`` (the native executor does not support ``what``)."""

    def tmp(self, init: str | None = None) -> str:
        """A new C temporary, initialized to ``init``."""
        ...

    def s_Block(self, s: ir.Block) -> None:
        """Emit a block statement."""
        ...

    def hash_of(self, fn: str, data: ir.Expr, payload: bool) -> str:
        """The C expression of hash ``fn`` over the field list ``data``."""
        ...

    def store(self, lhs: ir.Expr, value: str) -> None:
        """Emit ``lhs = value``."""
        ...


class WideGen(GenHooks):
    """The wide-value half of the C generator (``self`` is a ``cgen.Gen``)."""

    # ------------------------------------------------------------------ basics
    def wk(self, t: ir.Type) -> tuple[int, int]:
        """(W, limbs) of a wide type; the unit's ``wv`` gets enough limbs for it."""
        w = wide_width(t)
        k = limbs(t)
        self.u.wk = max(self.u.wk, k)
        return w, k

    def need(self, width: int) -> None:
        """The unit's ``wv`` holds ``width``-bit values (intermediate results)."""
        if width > 64:
            self.u.wk = max(self.u.wk, (width + 63) // 64)

    def wtmp(self, init: str | None = None) -> str:
        self.ntmp += 1
        t = f"_t{self.ntmp}"
        self.emit(f"wv {t} = {init if init is not None else 'w_zero()'};")
        return t

    def vtmp(self, t: ir.Type, init: str | None = None) -> str:
        """A C temporary for a value of type ``t`` (``wv`` when wide)."""
        return self.wtmp(init) if wide_width(t) else self.tmp(init)

    def load(self, p: Place, t: ir.Type) -> str:
        """The value of the scalar slot(s) at ``p``."""
        if wide_width(t):
            return f"w_ld(&S[{p.at()}], {self.wk(t)[1]})"
        return f"S[{p.at()}]"

    def widen(self, x: str, t: ir.Type) -> str:
        """``x`` (a value of type ``t``) as a ``wv`` holding its pattern."""
        return x if wide_width(t) else f"w_u({x})"

    def narrow(self, x: str, t: ir.Type) -> str:
        """``x`` as a u64 amount or index: the value, all ones when it does not fit."""
        return f"w_sat64({x})" if wide_width(t) else x

    def w_words(self, x: str, t: ir.Type, msb_first: bool = False) -> list[str]:
        """The limbs of a wide value as C expressions (``x`` is read once, into a temp)."""
        _, k = self.wk(t)
        v = self.wtmp(x)
        idx = range(k - 1, -1, -1) if msb_first else range(k)
        return [f"{v}.w[{i}]" for i in idx]

    def w_lit(self, value: int, width: int) -> str:
        self.need(width)
        words = ", ".join(f"0x{x:x}ULL" for x in split(value, width))
        return f"((wv){{{{{words}}}}})"

    # ------------------------------------------------------------------ expressions
    def w_const(self, e: ir.Const) -> str:
        w, _ = self.wk(e.type)
        return self.w_lit(int(e.value), w)

    def w_slice(self, e: ir.Slice) -> str:
        n = e.hi - e.lo + 1
        base = self.widen(self.expr(e.base), e.base.type)
        if n > 64:
            self.need(n)
            return f"w_slice({base}, {e.lo}, {n})"
        return f"w_bits({base}, {e.lo}, {n})"

    def w_unary(self, e: ir.Unary) -> str:
        w, _ = self.wk(e.type)
        x = self.expr(e.e)
        if e.op == "~":
            return f"w_not({x}, {w})"
        if e.op == "-":
            return f"w_neg({x}, {w})"
        raise self.unsupported(f"unary operator {e.op!r} on {e.type}", e)

    def w_binary(self, e: ir.Binary) -> str:
        op = e.op
        lt, rt, t = e.left.type, e.right.type, e.type
        a, b = self.expr(e.left), self.expr(e.right)
        if op in ("<<", ">>"):
            n = self.narrow(b, rt)
            if not wide_width(lt):  # a 64-bit value shifted by a wide amount
                w, s = word_bits(lt, e)
                if op == "<<":
                    return f"SHL({a}, {n}, {w})"
                return f"SSHR({a}, {n}, {w})" if s else f"SHR({a}, {n})"
            w, _ = self.wk(lt)
            if op == "<<":
                return f"w_shl({a}, {n}, {w})"
            return f"w_sshr({a}, {n}, {w})" if isinstance(lt, ir.BitT) and lt.signed else f"w_shr({a}, {n})"
        if op == "++":
            w, _ = self.wk(t)
            wr = ir.type_width(rt)
            return f"w_or(w_shl({self.widen(a, lt)}, {wr}, {w}), {self.widen(b, rt)})"
        w, _ = self.wk(lt)
        signed = isinstance(lt, ir.BitT) and lt.signed
        if op == "==":
            return f"w_eq({a}, {b})"
        if op == "!=":
            return f"(!w_eq({a}, {b}))"
        if op in ("<", ">", "<=", ">="):
            lt_ = (lambda x, y: f"w_lts({x}, {y}, {w})") if signed else (lambda x, y: f"w_ltu({x}, {y})")
            return {"<": lt_(a, b), ">": lt_(b, a), "<=": f"(!{lt_(b, a)})", ">=": f"(!{lt_(a, b)})"}[op]
        fn = {"+": "w_add", "-": "w_sub", "*": "w_mul"}.get(op)
        if fn is not None:
            return f"{fn}({a}, {b}, {w})"
        fn = {"&": "w_and", "|": "w_or", "^": "w_xor"}.get(op)
        if fn is not None:
            return f"{fn}({a}, {b})"
        if op in ("/", "%"):
            if signed:
                raise self.unsupported(f"signed {op} (P4 has no division of int<W>)", e)
            return f"{'w_divu' if op == '/' else 'w_modu'}({a}, {b})"
        if op == "|+|":
            return f"w_satadds({a}, {b}, {w})" if signed else f"w_sataddu({a}, {b}, {w})"
        if op == "|-|":
            return f"w_satsubs({a}, {b}, {w})" if signed else f"w_satsubu({a}, {b}, {w})"
        raise self.unsupported(f"binary operator {op!r} on {t}", e)

    def w_cast(self, x: str, src: ir.Type, dst: ir.Type, node: Any) -> str:
        """A cast between bit<W>/int<W>/bool/serializable enum types where one is wide."""
        if isinstance(dst, ir.EnumT):
            assert dst.underlying is not None
            return self.w_cast(x, src, dst.underlying, node)
        if isinstance(src, ir.EnumT):
            assert src.underlying is not None
            return self.w_cast(x, src.underlying, dst, node)
        if not isinstance(dst, ir.BitT) or not isinstance(src, (ir.BitT, ir.BoolT, ir.IntT)):
            raise self.unsupported(f"cast from {src} to {dst}", node)
        dw = dst.width
        if isinstance(src, (ir.BoolT, ir.IntT)):
            return f"w_mask(w_u({x}), {dw})" if dw > 64 else f"(({x}) & {_mask(dw)})"
        sw, ss = src.width, src.signed
        if dw <= 64:  # wide to narrow: the low bits
            return f"(w_lo({x}) & {_mask(dw)})"
        self.wk(dst)
        if sw <= 64:  # narrow to wide
            return f"w_s64(SX({x}, {sw}), {dw})" if ss else f"w_u({x})"
        if ss and dw > sw:
            return f"w_sext({x}, {sw}, {dw})"
        return f"w_mask({x}, {dw})" if dw < sw else x

    def w_hash(self, dst: ir.Expr, base: ir.Expr, mx: ir.Expr, fn: str, data: ir.Expr) -> None:
        """``hash()`` where the result, base or max is wide: ``base + h % max`` (``base``
        when max is 0), exact, then wrapped to the result (as the python executor)."""
        b = self.wtmp(self.widen(self.expr(base), base.type))
        h = self.tmp(self.hash_of(fn, data, False))
        m = self.wtmp(self.widen(self.expr(mx), mx.type))
        full = f"(w_nz({m}) ? w_add({b}, w_modu(w_u({h}), {m}), 64 * WK) : {b})"
        dw = wide_width(dst.type)
        if dw:
            self.wk(dst.type)
            self.store(dst, f"w_mask({full}, {dw})")
        else:
            self.store(dst, f"(w_lo({full}) & {_mask(word_bits(dst.type, dst)[0])})")

    def w_register(self, block: int, size: int, width: int, e: ir.MethodCall) -> None:
        """``read``/``write`` of a register of bit<W>/int<W>, W > 64: a cell is ``limbs``
        words of the register's C block ``block`` (never shared: ``fuse`` groups only
        registers of W <= 64); out of range a read gives 0 and a write does nothing."""
        k = (width + 63) // 64
        self.need(width)
        if e.method == "read":
            dst = call_arg(e, "result", 0)
            i = self.index(call_arg(e, "index", 1))
            self.store(dst, f"({i} < {size} ? w_ld(&sw_blk_(c, {block})[{i} * {k}], {k}) : w_zero())")
            return None
        if e.method == "write":
            i = self.index(call_arg(e, "index", 0))
            v = self.expr(call_arg(e, "value", 1))
            self.emit(f"if ({i} < {size}) w_st(&sw_blk_(c, {block})[{i} * {k}], {k}, w_mask({v}, {width}));")
            return None
        raise self.unsupported(f"method {e.method} of a register", e)

    def w_keyset(self, kx: str, ks: ir.Expr, t: ir.Type) -> str:
        """The C condition that the wide select key ``kx`` matches keyset ``ks``."""
        if isinstance(ks, ir.Mask):
            m = self.wtmp(self.expr(ks.mask))
            return f"w_eq(w_and({kx}, {m}), w_and({self.expr(ks.value)}, {m}))"
        if isinstance(ks, ir.Range):
            w, _ = self.wk(t)
            lo, hi = self.expr(ks.lo), self.expr(ks.hi)
            if isinstance(t, ir.BitT) and t.signed:
                return f"(!w_lts({kx}, {lo}, {w}) && !w_lts({hi}, {kx}, {w}))"
            return f"(!w_ltu({kx}, {lo}) && !w_ltu({hi}, {kx}))"
        if isinstance(ks, ir.ListExpr):
            raise self.unsupported("a tuple keyset inside a select case", ks)
        return f"w_eq({kx}, {self.expr(ks)})"

    def w_for_in(self, s: ir.ForIn) -> None:
        """``for (bit<W> v in lo .. hi)`` with W > 64 (as ``Gen.s_ForIn``)."""
        d = s.var
        w, k = self.wk(d.type)
        self.ntmp += 1
        n = self.ntmp
        v = f"&S[{self.u.var(d.uid, d.type, d.name, d.loc)}]"
        self.emit("{")
        lo, hi = self.wtmp(self.expr(s.lo)), self.wtmp(self.expr(s.hi))
        signed = isinstance(d.type, ir.BitT) and d.type.signed
        le = f"!w_lts({hi}, {lo}, {w})" if signed else f"!w_ltu({hi}, {lo})"
        self.emit(f"if ({le}) for (w_st({v}, {k}, {lo});; w_st({v}, {k}, w_add(w_ld({v}, {k}), w_u(1), {w}))) {{")
        self.loops.append(n)
        try:
            self.s_Block(s.body)
        finally:
            self.loops.pop()
        self.emit(f"cont{n}: if (w_eq(w_ld({v}, {k}), {hi})) break;")
        self.emit("}")
        self.emit(f"brk{n}: ;")
        self.emit("}")

    def index(self, x: ir.Expr) -> str:
        """A temp holding an index expression (a wide one saturated to 64 bits)."""
        return self.tmp(self.narrow(self.expr(x), x.type))

    # ------------------------------------------------------------------ stores
    def w_store(self, lv: str, lhs: ir.Expr, value: str) -> None:
        """``lv`` (``S[i]``, the first limb of the target or of the slice's base) = value."""
        if isinstance(lhs, ir.Slice):
            bw, k = self.wk(lhs.base.type)
            n = lhs.hi - lhs.lo + 1
            v = value if n > 64 else f"w_u({value})"
            self.emit(f"w_st(&{lv}, {k}, w_setslice(w_ld(&{lv}, {k}), {v}, {lhs.lo}, {n}, {bw}));")
            return
        _, k = self.wk(lhs.type)
        self.emit(f"w_st(&{lv}, {k}, {value});")

    def fit(self, x: str, t: ir.Type) -> str:
        """A 64-bit result ``x`` for a destination of type ``t``."""
        return f"w_u({x})" if wide_width(t) else x


def _mask(w: int) -> str:
    return f"0x{(1 << w) - 1:x}ULL"
