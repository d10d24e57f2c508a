"""The state one program build shares between the builder parts, and its diagnostics.

Why: the parts that type a program (``expressions``, ``calls``, ``annotations``,
``statements``, ``keysets``, ``tables``, ``blocks``, ``program``) each do one job and call
each other, but they read and write the same few things: the current scope, the kind of
body being built, the control-plane path, the program-wide tables of externs, actions and
errors.
Holding those here, in one object every part is given, lets each part be built from
what it needs instead of inheriting every other part's methods.  The Protocols at the
end name what a part calls back into a part built after it (an expression that is a
call, a direct ``T.apply()``), so no module of the front-end imports one above it.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from . import ir
from .errors import P4Error, UnsupportedError
from .lexer import Tok
from .parse import tree_loc
from .preprocess import Preprocessed
from .symbols import BlockDecl, DuplicateError, Scope, decl_loc
from .tree import ParseNode

_log = logging.getLogger("innet.switch.frontend")


def name_of(t: ParseNode | Tok) -> str:
    """The identifier a name node (or token) spells."""
    while not isinstance(t, Tok):
        t = t.children[0]
    return str(t)


class BuildContext:
    """What every part of one program build reads and writes (see the module docstring)."""

    def __init__(self, pp: Preprocessed, annos: list[Any]) -> None:
        self.pp = pp
        """The preprocessed program (source lines for carets, positions)."""
        self.annos = annos
        """The parser's annotation table; an ``annos`` tree node indexes it."""
        self.global_scope = Scope()
        self.scope = self.global_scope
        """The scope names resolve in; a part that opens a scope restores it after."""
        self.errors: list[str] = []
        """Members of ``error`` in declaration order."""
        self.warnings: list[str] = []
        """Every warning given so far, as logged (``Program.warnings``)."""
        self.match_kinds: list[str] = []
        self.digest_calls: list[ir.ExternCall] = []
        self.externs: dict[str, ir.ExternDecl] = {}
        self.newtypes: dict[str, ir.Type] = {}
        """Names declared with ``type`` -> their underlying type."""
        self.block_kind = "control"
        """What the code being built is in: control, parser, action or function."""
        self.return_type: ir.Type | None = None
        """The return type of the function being built (None outside functions)."""
        self.path = ""
        """Control-plane name prefix of the block being specialised."""
        self.actions_global: dict[str, ir.Action] = {}
        self.action_cp_names: dict[str, ir.Loc] = {}
        """Control-plane name of every action declaration built so far -> its location."""
        self._uid = 0

    # ------------------------------------------------------------------ diagnostics
    def loc(self, node: ParseNode | Tok) -> ir.Loc:
        return tree_loc(self.pp, node)

    def err(self, loc: ir.Loc, msg: str) -> P4Error:
        return P4Error(loc, msg, self.pp.source_line(loc))

    def warn(self, loc: ir.Loc, msg: str) -> None:
        """A diagnostic p4c gives as a warning: logged (``file:line:col: warning: ...``),
        compilation goes on."""
        text = f"{loc.file}:{loc.line}:{loc.col}: warning: {msg}"
        self.warnings.append(text)
        _log.warning("%s", text)

    def unsupported(self, loc: ir.Loc, what: str) -> P4Error:
        return UnsupportedError(loc, f"unsupported: {what} is not supported by innet's "
                                "embedded target", self.pp.source_line(loc))

    # ------------------------------------------------------------------ names
    name_of = staticmethod(name_of)

    def new_uid(self) -> int:
        self._uid += 1
        return self._uid

    def declare(self, name: str, sym: object, loc: ir.Loc) -> None:
        """Add a value name to the current scope, rejecting duplicates; at the top level it
        may not also name a type (p4c: one namespace)."""
        if self.scope is self.global_scope and name in self.global_scope.types:
            raise self.err(loc, f"re-declaration of '{name}' with a different kind: '{name}' is already "
                           "declared as a type")
        try:
            self.scope.add(name, sym)
        except DuplicateError as e:
            prev = decl_loc(e.previous)
            where = f" (previous declaration at {prev})" if prev != ir.NOLOC else ""
            raise self.err(loc, f"duplicate declaration of '{name}'{where}") from None

    def cp_name(self, local: str, annos: ir.Annotations) -> str:
        """The control-plane name of ``local`` declared in the block at ``path``
        (``@name("x")`` renames it, ``@name(".x")`` makes it absolute)."""
        a = annos.get("name")
        if a is not None and a.body and isinstance(a.body[0], str):
            n = a.body[0]
            if n.startswith("."):
                return n[1:]
            local = n
        return f"{self.path}.{local}" if self.path else local


class CallTyper(Protocol):
    """Types a call (``calls.Calls``); expression typing hands it call expressions."""

    def call(self, target: ParseNode, targs: tuple[ir.Type, ...], args_tree: ParseNode | None,
             loc: ir.Loc) -> ir.Expr:
        """The typed call of ``target`` with type arguments ``targs`` and ``args_tree``."""
        ...


class Instantiator(Protocol):
    """Builds instances (``blocks.Blocks``): a direct ``T.apply()`` in an expression, an
    extern instance in a table property."""

    def direct_instance(self, decl: BlockDecl, loc: ir.Loc) -> ir.Instance:
        """The fresh instance a direct invocation ``T.apply(...)`` applies."""
        ...

    def make_instance(self, type_t: ParseNode, args_t: ParseNode | None, name: str,
                      annos: ir.Annotations, loc: ir.Loc, cp_name: str) -> ir.Instance:
        """An instance of the type ``type_t`` with constructor arguments ``args_t``."""
        ...
