"""The parse tree's interior node: lark's ``Tree`` interface in a quarter of its memory.

Why not lark's ``Tree``: it has no ``__slots__`` (an instance dictionary per node) and a
``Meta`` object per node, and a macro-expanded program has half a million nodes whose
memory was most of a cold compile's peak.  ``ParseNode`` keeps what the IR builder reads
(``data``, ``children``, ``meta``) in four slots: the node's position is its first and
last token (``lexer.Tok``, the tree's leaves), read through a ``Span`` made on demand.
"""

from __future__ import annotations

from typing import Any

from .lexer import Tok


class Span:
    """A node's position as lark's ``Meta`` reports it, read from the node's first and
    last token; ``empty`` for a node that covers no token (an empty list)."""

    __slots__ = ("first", "last")

    def __init__(self, first: Tok | None, last: Tok | None) -> None:
        self.first = first
        self.last = last

    @property
    def empty(self) -> bool:
        return self.first is None

    @property
    def line(self) -> int:
        return self.first.line  # type: ignore[union-attr]

    @property
    def column(self) -> int:
        return self.first.col  # type: ignore[union-attr]

    @property
    def start_pos(self) -> int:
        return self.first.pos  # type: ignore[union-attr]

    @property
    def end_line(self) -> int:
        return self.last.line  # type: ignore[union-attr]

    @property
    def end_column(self) -> int:
        return self.last.end_column  # type: ignore[union-attr]

    @property
    def end_pos(self) -> int:
        return self.last.end_pos  # type: ignore[union-attr]


class ParseNode:
    """A rule's node: ``data`` is the rule (or alias) name, ``children`` its kept
    children (``ParseNode``, ``Tok`` or ``None`` placeholders), ``first``/``last`` the
    tokens it starts and ends on (None for an empty node).  ``outer`` is the parser's:
    the extent of a ``?rule`` that returned this node in place of itself (lark's
    ``container_*``), read only while building the parent."""

    __slots__ = ("data", "children", "first", "last", "outer")

    def __init__(self, data: str, children: list[Any], first: Tok | None = None,
                 last: Tok | None = None) -> None:
        self.data = data
        self.children = children
        self.first = first
        self.last = last
        self.outer: tuple[Tok, Tok] | None = None

    @classmethod
    def at(cls, data: str, children: list[Any], where: ParseNode) -> ParseNode:
        """A node the IR builder makes in place of ``where``, with its position."""
        return cls(data, children, where.first, where.last)

    @property
    def meta(self) -> Span:
        return Span(self.first, self.last)

    def __repr__(self) -> str:
        return f"ParseNode({self.data!r}, {self.children!r})"
