"""Scopes and symbol kinds used while building the IR.

Why: P4 resolves names lexically (action bodies see control locals, which see the
control's parameters, which see globals).  A chain of ``Scope`` objects models that;
the symbol classes below are the things a name can denote besides IR declarations
(``ir.Param``, ``ir.VarDecl``, ``ir.Instance``, ``ir.Action``, ``ir.Table``,
``ir.Function``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from innet.names import did_you_mean  # noqa: F401  (the front-end imports it from here)

from . import ir
from .tree import ParseNode


@dataclass(eq=False)
class ConstSym:
    """A compile-time constant (``const``, constructor parameter, enum value...)."""

    name: str
    value: ir.Expr
    loc: ir.Loc


@dataclass(eq=False)
class ExternFnSym:
    """An extern function; ``decl.methods`` holds its overloads."""

    decl: ir.ExternDecl
    loc: ir.Loc = ir.NOLOC


@dataclass(eq=False)
class BlockDecl:
    """A parser or control declaration, kept as a tree and specialised per instance."""

    kind: str  # 'parser' | 'control'
    name: str
    tree: ParseNode
    annotations: ir.Annotations
    params: tuple[ir.Param, ...]
    ctor_params: tuple[ir.Param, ...]
    loc: ir.Loc


@dataclass(eq=False)
class BlockTypeDecl:
    """``parser Parser<H, M>(...);`` / ``control Ingress<H, M>(...);``"""

    kind: str
    name: str
    type_params: tuple[str, ...]
    params: tuple[ir.Param, ...]
    loc: ir.Loc


@dataclass(eq=False)
class PackageDecl:
    name: str
    type_params: tuple[str, ...]
    params: tuple[ir.Param, ...]
    loc: ir.Loc


def decl_loc(sym: object) -> ir.Loc:
    return getattr(sym, "loc", ir.NOLOC)


class DuplicateError(Exception):
    def __init__(self, name: str, previous: object) -> None:
        super().__init__(name)
        self.name = name
        self.previous = previous


@dataclass(eq=False)
class Scope:
    """One lexical level.  ``values`` holds value names, ``types`` type names."""

    parent: "Scope | None" = None
    values: dict[str, object] = field(default_factory=dict)
    types: dict[str, object] = field(default_factory=dict)

    def child(self) -> "Scope":
        return Scope(self)

    def add(self, name: str, sym: object) -> None:
        if name in self.values:
            raise DuplicateError(name, self.values[name])
        self.values[name] = sym

    def add_type(self, name: str, sym: object) -> None:
        if name in self.types:
            raise DuplicateError(name, self.types[name])
        self.types[name] = sym

    def root(self) -> "Scope":
        """The top-level scope this one is nested in (``.name`` looks there)."""
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    def lookup(self, name: str) -> object | None:
        s: Scope | None = self
        while s is not None:
            v = s.values.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    def lookup_type(self, name: str) -> object | None:
        s: Scope | None = self
        while s is not None:
            v = s.types.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    def all_value_names(self) -> list[str]:
        out: list[str] = []
        s: Scope | None = self
        while s is not None:
            out.extend(s.values)
            s = s.parent
        return out

    def all_type_names(self) -> list[str]:
        out: list[str] = []
        s: Scope | None = self
        while s is not None:
            out.extend(s.types)
            s = s.parent
        return out
