"""Annotations: the parser's folded ``@name(...)``/``@name[...]`` to ``ir.Annotations``,
checked by p4c's rules.

Why a part of its own: every declaration carries annotations and every part that builds
one (statements, blocks, tables, the top level) needs them checked the same way; their
one tie to typing is that a structured annotation's values are typed as expressions.
"""

from __future__ import annotations

from typing import Any

from . import ir
from .context import BuildContext
from .expressions import Exprs
from .lexer import Tok
from .parse import convert_annotation, parse_annotation_body
from .tree import ParseNode


def _translation_width_ok(body: list[Tok]) -> bool:
    """The type part of ``@p4runtime_translation("uri", T)``: an integer, ``bit<W>`` or ``string``."""
    comma = next((i for i, t in enumerate(body) if t.kind == ","), None)
    if comma is None:
        return True  # p4c reports a missing argument elsewhere; nothing to check here
    rest = [t.text for t in body[comma + 1:]]
    return (len(rest) == 1 and (rest[0].isdigit() or rest[0] == "string")) or \
        (len(rest) == 4 and rest[0] == "bit" and rest[1] == "<" and rest[2].isdigit() and rest[3] == ">")


class Annotator:
    """Builds and checks the annotations of a declaration in the context's current scope."""

    def __init__(self, cx: BuildContext, exprs: Exprs) -> None:
        self.cx = cx
        self.exprs = exprs

    def annotations(self, t: ParseNode | None) -> ir.Annotations:
        if t is None:
            return {}
        out: ir.Annotations = {}
        structured: set[str] = set()
        for tok in t.children:
            raw = self.cx.annos[int(str(tok))]
            self._check_annotation(raw, tok, structured if raw.name in out else None)
            if raw.structured:
                structured.add(raw.name)
            a = convert_annotation(raw)
            out[a.name] = a
        return out

    def _check_annotation(self, raw: Any, tok: Tok, structured_seen: set[str] | None) -> None:
        """p4c's rules: ``@name``/``@deprecated`` hold one string; a structured annotation's
        name is not repeated and its values are literals (or ``key = literal``)."""
        loc = self.cx.loc(tok)
        if structured_seen is not None and (raw.structured or raw.name in structured_seen):
            raise self.cx.err(loc, f"@{raw.name}: duplicate name for structured annotation")
        if raw.name in ("name", "deprecated") and not raw.structured and raw.body and \
                not (len(raw.body) == 1 and raw.body[0].kind == "STRING_LITERAL"):
            raise self.cx.err(loc, f"@{raw.name} should contain a single string literal, not '{raw.text.strip()}'")
        if raw.name == "pkginfo" and not any(b.kind == "=" for b in raw.body):
            raise self.cx.err(loc, "@pkginfo needs a body of key=value pairs, e.g. @pkginfo(version=\"1.0\")")
        if raw.name == "p4runtime_translation" and not _translation_width_ok(raw.body):
            raise self.cx.err(loc, f"@p4runtime_translation({raw.text.strip()}): the second argument must be an "
                           "integer width, bit<W> or string")
        if raw.structured and any(b.kind in ("{", "(", "[") for b in raw.body):
            raise self.cx.err(loc, f"@{raw.name}[{raw.text.strip()}]: illegal value for a structured annotation; "
                           "it must be an int, string or bool literal")
        if raw.structured:
            values = parse_annotation_body(raw.body, lambda name: self.cx.scope.lookup_type(name) is not None)
            if values is not None:
                self.exprs.expr(values)  # typed as p4c types them: '@a[t == t1]' on two externs is an error
