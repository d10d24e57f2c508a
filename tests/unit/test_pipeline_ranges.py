"""Value ranges in expression generation (switch/pipeline/ranges.py, exprgen): wraps are left
out only where they cannot change a value. Randomized differential test of generated
expressions against a direct model of P4 arithmetic, plus the shapes the optimisation must
produce for innet.p4's fixed-point multiply."""

from __future__ import annotations

import random
from typing import Any

import pytest

from innet.switch.frontend import ir
from innet.switch.pipeline.runtime import HELPERS as _HELPERS
from innet.switch.pipeline.exprgen import ExprGen
from innet.switch.pipeline.ranges import arith, shift_right, type_range, within, written_locals
from innet.switch.pipeline.stmtgen import StmtGen

TYPES = [ir.BitT(8), ir.BitT(16), ir.BitT(32), ir.BitT(64), ir.BitT(8, True), ir.BitT(32, True),
         ir.BitT(64, True)]


def wrap(v: int, t: ir.BitT) -> int:
    v &= (1 << t.width) - 1
    if t.signed and v >> (t.width - 1):
        v -= 1 << t.width
    return v


def model(e: ir.Expr, env: dict[int, int]) -> int:
    """P4_16 semantics of the expression subset, written independently of the generator."""
    if isinstance(e, ir.Const):
        return int(e.value)
    if isinstance(e, ir.VarRef):
        return env[e.decl.uid]
    if isinstance(e, ir.Cast):
        assert isinstance(e.type, ir.BitT)
        return wrap(model(e.e, env), e.type)
    if isinstance(e, ir.Slice):
        return (model(e.base, env) >> e.lo) & ((1 << (e.hi - e.lo + 1)) - 1)
    assert isinstance(e, ir.Binary) and isinstance(e.type, ir.BitT)
    a, b = model(e.left, env), model(e.right, env)
    t = e.type
    if e.op == "+":
        return wrap(a + b, t)
    if e.op == "-":
        return wrap(a - b, t)
    if e.op == "*":
        return wrap(a * b, t)
    if e.op == "&":
        return a & b
    if e.op == "|":
        return a | b
    if e.op == "^":
        return a ^ b
    if e.op == ">>":
        return a >> b  # arithmetic for int<W>, logical for (non-negative) bit<W>
    if e.op == "<<":
        return wrap(a << b, t) if b < t.width else 0
    raise AssertionError(e.op)


class Vars:
    """Locals of the generated expression: some typed only, some with a narrower range
    (as a local written only by a sign-extending initializer would get)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.decls: list[tuple[ir.VarDecl, tuple[int, int]]] = []
        uid = 1000
        for t in TYPES:
            tr = type_range(t)
            assert tr is not None
            self.decls.append((ir.VarDecl(f"x{uid}", t, uid), tr))
            uid += 1
        for t, r in ((ir.BitT(64, True), (-(1 << 31), (1 << 31) - 1)), (ir.BitT(32, True), (-128, 127)),
                     (ir.BitT(64), (0, 0xFFFF))):
            self.decls.append((ir.VarDecl(f"x{uid}", t, uid), r))
            uid += 1

    def gen(self) -> ExprGen:
        # no slots needed: every variable is a Python local
        g = StmtGen(None).exprs  # type: ignore[arg-type]
        for d, r in self.decls:
            g.ctx.locals[d.uid] = d.name
            if r != type_range(d.type):
                g.ctx.ranges[d.uid] = r
        return g

    def env(self) -> dict[int, int]:
        out = {}
        for d, (lo, hi) in self.decls:
            out[d.uid] = self.rng.choice([lo, hi, 0, -1 if lo < 0 else 1, self.rng.randint(lo, hi)])
        return out


def random_expr(rng: random.Random, vs: Vars, t: ir.BitT, depth: int) -> ir.Expr:
    if depth == 0 or rng.random() < 0.2:
        same = [d for d, _ in vs.decls if d.type == t]
        if same and rng.random() < 0.7:
            return ir.VarRef(rng.choice(same), t)
        tr = type_range(t)
        assert tr is not None
        return ir.Const(rng.choice([tr[0], tr[1], 0, 1, rng.randint(*tr)]), t)
    k = rng.random()
    if k < 0.3:
        src = rng.choice(TYPES + [ir.BitT(64, True)] * 2)
        return ir.Cast(t, random_expr(rng, vs, src, depth - 1))
    if k < 0.38 and t.width <= 32 and not t.signed:
        src = rng.choice([x for x in TYPES if x.width >= t.width])
        lo = rng.randint(0, src.width - t.width)
        return ir.Slice(random_expr(rng, vs, src, depth - 1), lo + t.width - 1, lo, t)
    op = rng.choice(["+", "-", "*", "*", "&", "|", "^", ">>", "<<"])
    left = random_expr(rng, vs, t, depth - 1)
    if op in (">>", "<<"):
        st = ir.BitT(8)
        right = ir.Const(rng.randint(0, t.width + 2), st) if rng.random() < 0.5 else random_expr(rng, vs, st, depth - 1)
        return ir.Binary(op, left, right, t)
    return ir.Binary(op, left, random_expr(rng, vs, t, depth - 1), t)


@pytest.mark.parametrize("seed", range(8))
def test_generated_arithmetic_matches_p4_semantics(seed: int) -> None:
    rng = random.Random(seed)
    vs = Vars(rng)
    for _ in range(150):
        t = rng.choice(TYPES)
        e = random_expr(rng, vs, t, 4)
        g = vs.gen()
        code = compile(g.expr(e), "<expr>", "eval")
        assert not g.lines, "expressions of this subset need no statements"
        for _ in range(6):
            env = vs.env()
            names: dict[str, Any] = dict(_HELPERS)
            names.update({d.name: env[d.uid] for d, _ in vs.decls})
            got = eval(code, names)  # noqa: S307 - generated by the code under test
            want = model(e, env)
            assert got == want, (g.expr(e), env)
            r = g.vrange(e)
            assert r is not None and r[0] <= got <= r[1], (g.expr(e), r, got)


def fixmul(vs: Vars, f: ir.VarDecl, b: ir.VarDecl, shift: ir.VarDecl) -> ir.Expr:
    """innet.p4's INNET_FIXMUL: (bit<32>)(bit<64>)((f * (int<64>)(int<32>)b) >> shift)."""
    i64, i32 = ir.BitT(64, True), ir.BitT(32, True)
    prod = ir.Binary("*", ir.VarRef(f, i64), ir.Cast(i64, ir.Cast(i32, ir.VarRef(b, ir.BitT(32)))), i64)
    shifted = ir.Binary(">>", prod, ir.VarRef(shift, ir.BitT(8)), i64)
    return ir.Cast(ir.BitT(32), ir.Cast(ir.BitT(64), shifted))


def test_fixed_point_multiply_is_masked_once() -> None:
    vs = Vars(random.Random(0))
    by = {(d.type, r): d for d, r in vs.decls}
    f = by[(ir.BitT(64, True), (-(1 << 31), (1 << 31) - 1))]  # a sign-extended int<32>
    b = by[(ir.BitT(32), (0, (1 << 32) - 1))]
    sh = by[(ir.BitT(8), (0, 255))]
    w = ir.VarDecl("w", ir.BitT(32), 1)
    g = vs.gen()
    g.ctx.locals[w.uid] = "w"
    e = ir.Binary("-", ir.VarRef(w, ir.BitT(32)), fixmul(vs, f, b, sh), ir.BitT(32))
    code = g.expr(e)
    assert code == f"((w - (({f.name} * (({b.name} ^ 2147483648) - 2147483648)) >> {sh.name})) & 4294967295)"
    # the same with a full-range int<64> factor needs the int64 wrap of the product
    f64 = by[(ir.BitT(64, True), type_range(ir.BitT(64, True)))]
    assert "9223372036854775808" in vs.gen().expr(fixmul(vs, f64, b, sh))


def test_range_helpers() -> None:
    assert arith("*", (-3, 2), (-5, 4)) == (-12, 15)
    assert arith("-", (0, 10), (0, 3)) == (-3, 10)
    assert shift_right((-8, 9), 2) == (-2, 2)
    assert shift_right((-8, 9), None) == (-8, 9)
    assert shift_right((5, 9), None) == (0, 9)
    assert within((0, 3), (0, 3)) and not within((0, 4), (0, 3)) and not within(None, (0, 1))
    assert type_range(ir.BitT(8, True)) == (-128, 127) and type_range(ir.IntT()) is None


def test_written_locals_finds_assignments_and_out_arguments() -> None:
    a, b, c, d = (ir.VarDecl(n, ir.BitT(32), u) for n, u in (("a", 1), ("b", 2), ("c", 3), ("d", 4)))
    t = ir.BitT(32)
    reg = ir.InstanceRef(None, ir.ExternT("register"))  # type: ignore[arg-type]
    read = ir.MethodCall(reg, "read", (ir.Arg(ir.VarRef(b, t), "out", None), ir.Arg(ir.VarRef(c, t), "in", None)),
                         (), ir.VoidT())
    body = ir.Block((
        ir.VarDeclStmt(a, ir.Const(1, t)),
        ir.Assign(ir.Slice(ir.VarRef(d, t), 3, 0, ir.BitT(4)), ir.VarRef(a, t)),
        ir.If(ir.Binary("==", ir.VarRef(a, t), ir.VarRef(c, t), ir.BoolT()), ir.Block((ir.CallStmt(read),)), None),
    ))
    assert written_locals(body) == {2, 4}
