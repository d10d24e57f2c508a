"""Keysets: what a select case or a constant table entry matches, typed against its keys.

Why a part of its own: parsers (``select`` cases) and tables (``const entries``) share
the rules -- one element per key, ``default`` and ``_``, masks and ranges of the key's
type, no function calls -- and neither should reach into the other for them.
"""

from __future__ import annotations

from . import ir
from .context import BuildContext
from .expressions import Exprs, children
from .lexer import Tok
from .tree import ParseNode
from .walk import contains


class Keysets:
    """Types keysets against key types; the expressions in them by the expression part."""

    def __init__(self, cx: BuildContext, exprs: Exprs) -> None:
        self.cx = cx
        self.exprs = exprs

    def _keysets(self, t: ParseNode | Tok, types: list[ir.Type], what: str) -> tuple[ir.Expr, ...]:
        loc = self.cx.loc(t)
        if isinstance(t, ParseNode) and t.data == "tuple_keyset":
            items = children(t)
            if len(items) != len(types):
                raise self.cx.err(loc, f"{what} has {len(items)} keyset elements but there are "
                               f"{len(types)} keys")
            return tuple(self.keyset(i, ty, what) for i, ty in zip(items, types))
        if isinstance(t, ParseNode) and t.data in ("default_key", "dontcare_key"):
            return tuple(self.keyset(t, ty, what) for ty in types)
        if len(types) != 1:
            raise self.cx.err(loc, f"{what} has 1 keyset element but there are {len(types)} keys")
        return (self.keyset(t, types[0], what),)

    def keysets(self, t: ParseNode | Tok, types: list[ir.Type], what: str) -> tuple[ir.Expr, ...]:
        """One keyset per key type (a select case's or a table entry's); p4c's rule that a
        keyset holds no function call is checked here."""
        out = self._keysets(t, types, what)
        for k in out:
            if contains(k, lambda n: isinstance(n, ir.FunctionCall)):
                raise self.cx.err(k.loc, f"{what}: no function calls are allowed in a keyset")
        return out

    def keyset(self, t: ParseNode | Tok, ty: ir.Type, what: str) -> ir.Expr:
        loc = self.cx.loc(t)
        if isinstance(t, ParseNode):
            if t.data == "default_key":
                return ir.DefaultKey(ir.DontCareT(), loc, True)
            if t.data == "dontcare_key":
                return ir.DefaultKey(ir.DontCareT(), loc, False)
            if t.data == "mask":
                v = self.exprs.coerce(self.exprs.expr(t.children[0]), ty, f"{what} value")
                me = self.exprs.expr(t.children[1])
                # a mask on a serializable enum key is a bit pattern of its underlying type
                # (p4c accepts 'E.A &&& 0xff00')
                mt = ty.underlying if isinstance(ty, ir.EnumT) and ty.underlying is not None \
                    and not isinstance(me.type, ir.EnumT) else ty
                m = self.exprs.coerce(me, mt, f"{what} mask")
                return ir.Mask(v, m, ty, loc)
            if t.data == "range":
                lo = self.exprs.coerce(self.exprs.expr(t.children[0]), ty, f"{what} range")
                hi = self.exprs.coerce(self.exprs.expr(t.children[1]), ty, f"{what} range")
                return ir.Range(lo, hi, ty, loc)
        return self.exprs.coerce(self.exprs.expr(t), ty, what)
