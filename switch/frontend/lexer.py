"""Tokenizer for preprocessed P4_16 text.

Why a hand-written lexer in front of lark: P4's grammar is LALR only if the lexer
tells type names from other identifiers (as p4c's does) and tells a type-argument ``<``
from less-than, and the closing ``>>`` of nested type arguments from a right shift.
Those decisions need a look at the surrounding tokens, which a regular lexer cannot
take.  Annotations are folded here into single ``ANNOTATION`` tokens so the grammar does
not have to describe their free-form bodies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KEYWORDS = frozenset("""
abstract action actions apply bool bit break const continue control default else entries
enum error exit extern false for header header_union if in inout int key list match_kind
out package parser priority return select state string struct switch table this transition
true tuple type typedef varbit value_set void
""".split())

# compound assignments (P4_16 1.2.4): ``a op= b`` is ``a = a op b``; one terminal, ASSIGN_OP
ASSIGN_OPS = ("|+|=", "|-|=", "<<=", ">>=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=")

_PUNCT = [*ASSIGN_OPS, "&&&", "|+|", "|-|", "..", "<<", "<=", ">=", "==", "!=", "&&", "||", "++",
          "<", ">", "=", "!", "~", "+", "-", "*", "/", "%", "&", "|", "^", "?", ":", ";",
          ",", ".", "(", ")", "[", "]", "{", "}", "@"]

_TOKEN_RE = re.compile(r"""
  (?P<ws>[ \t\r\f\v]+)
| (?P<nl>\n)
| (?P<lcomment>//[^\n]*)
| (?P<bcomment>/\*.*?\*/)
| (?P<int>(?:\d+[wWsS]-?)?(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|\d[\d_]*)(?![A-Za-z0-9_]))
| (?P<string>"(?:[^"\\\n]|\\.)*")
| (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
| (?P<punct>""" + "|".join(re.escape(p) for p in _PUNCT) + r""")
""", re.X | re.S)

TYPE_START_KW = frozenset({"bit", "int", "varbit", "bool", "string", "void", "tuple", "error"})


class SourceLine:
    """One line of the lexed text: its number and the offset it starts at, shared by the
    tokens on it (a token's column is computed from its offset, not stored)."""

    __slots__ = ("number", "start")

    def __init__(self, number: int, start: int) -> None:
        self.number = number
        self.start = start


class Tok:
    """A token: ``kind`` is the grammar terminal kind (IDENTIFIER, TYPE_IDENTIFIER,
    INTEGER, STRING_LITERAL, ANNOTATION, DONTCARE, L_ANGLE_T, SHR_ANGLE, or the keyword /
    punctuation text itself).  The parse tree keeps these as its leaves, so they are
    small: four references, the line and column read through the shared ``SourceLine``
    (a macro-expanded program has hundreds of thousands of them, on long lines whose
    columns would each be an int object of their own)."""

    __slots__ = ("kind", "text", "pos", "row")

    def __init__(self, kind: str, text: str, pos: int, row: SourceLine) -> None:
        self.kind = kind
        self.text = text
        self.pos = pos
        self.row = row

    def __repr__(self) -> str:
        return f"Tok({self.kind!r}, {self.text!r}, {self.line}:{self.col})"

    def __str__(self) -> str:
        return self.text

    @property
    def line(self) -> int:
        return self.row.number

    @property
    def col(self) -> int:
        return self.pos - self.row.start + 1

    # lark ``Token``'s names, so that the tree's leaves read as lark's did
    @property
    def type(self) -> str:
        return self.kind

    @property
    def value(self) -> str:
        return self.text

    column = col  # lark's name for the same position

    @property
    def start_pos(self) -> int:
        return self.pos

    @property
    def end_line(self) -> int:
        return self.row.number

    @property
    def end_column(self) -> int:
        return self.pos - self.row.start + 1 + len(self.text)

    @property
    def end_pos(self) -> int:
        return self.pos + len(self.text)


@dataclass(slots=True)
class AnnotationTok:
    """Body of a folded annotation: its name and the raw tokens between the brackets."""

    name: str
    body: list[Tok]
    text: str
    structured: bool = False
    """Written ``@name[...]`` (a structured annotation, whose body is a list of values)."""


class LexError(Exception):
    def __init__(self, line: int, col: int, message: str) -> None:
        super().__init__(message)
        self.line, self.col, self.message = line, col, message


def tokenize(text: str) -> list[Tok]:
    """Split text into raw tokens (identifiers not yet classified)."""
    toks: list[Tok] = []
    line, line_start, pos, n = 1, 0, 0, len(text)
    row = SourceLine(1, 0)
    match = _TOKEN_RE.match
    # one string per distinct identifier or literal: a macro-expanded program repeats a
    # few thousand names hundreds of thousands of times, and the tree's tokens keep them
    intern: dict[str, str] = {}
    same = intern.setdefault
    while pos < n:
        m = match(text, pos)
        if m is None:
            raise LexError(line, pos - line_start + 1, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup
        val = m.group()
        if kind == "nl":
            line += 1
            line_start = m.end()
            row = SourceLine(line, line_start)
        elif kind == "bcomment":
            nls = val.count("\n")
            if nls:
                line += nls
                line_start = pos + val.rfind("\n") + 1
                row = SourceLine(line, line_start)
        elif kind in ("ws", "lcomment"):
            pass
        else:
            if kind in ("ident", "int"):
                val = same(val, val)
            if kind == "int":
                toks.append(Tok("INTEGER", val, pos, row))
            elif kind == "string":
                toks.append(Tok("STRING_LITERAL", val, pos, row))
            elif kind == "ident":
                if val == "_":
                    toks.append(Tok("DONTCARE", val, pos, row))
                elif val in KEYWORDS:
                    toks.append(Tok(val, val, pos, row))
                else:
                    toks.append(Tok("IDENTIFIER", val, pos, row))
            else:
                toks.append(Tok("ASSIGN_OP" if val in ASSIGN_OPS else val, val, pos, row))
        pos = m.end()
    if text.find("/*", pos) != -1:
        pass
    return toks


def fold_annotations(toks: list[Tok], text: str, store: list[AnnotationTok]) -> list[Tok]:
    """Replace ``@name`` / ``@name(...)`` / ``@name[...]`` by ANNOTATION tokens whose text is
    an index into ``store``."""
    out: list[Tok] = []
    i, n = 0, len(toks)
    while i < n:
        t = toks[i]
        if t.kind != "@":
            out.append(t)
            i += 1
            continue
        if i + 1 >= n or not (toks[i + 1].kind in ("IDENTIFIER", "TYPE_IDENTIFIER")
                              or toks[i + 1].kind in KEYWORDS):
            raise LexError(t.line, t.col, "expected an annotation name after '@'")
        name = toks[i + 1].text
        j = i + 2
        body: list[Tok] = []
        raw = ""
        structured = j < n and toks[j].kind == "["
        if j < n and toks[j].kind in ("(", "["):
            open_k = toks[j].kind
            close_k = ")" if open_k == "(" else "]"
            depth, k = 0, j
            while k < n:
                if toks[k].kind == open_k:
                    depth += 1
                elif toks[k].kind == close_k:
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            if k >= n:
                raise LexError(toks[j].line, toks[j].col, f"unterminated annotation @{name}")
            body = toks[j + 1:k]
            raw = text[toks[j].pos + 1:toks[k].pos]
            j = k + 1
        store.append(AnnotationTok(name, body, raw, structured))
        out.append(Tok("ANNOTATION", str(len(store) - 1), t.pos, t.row))
        i = j
    return out


_DECL_KW = {"header", "header_union", "struct", "enum", "parser", "control", "package"}


def _collect_type_names(toks: list[Tok]) -> tuple[set[str], list[tuple[str, int, int]]]:
    """Names declared as types anywhere, and generic type parameters with the token
    index range of the declaration they belong to."""
    names: set[str] = set()
    generics: list[tuple[str, int, int]] = []
    n = len(toks)

    def ident(i: int) -> bool:
        return 0 <= i < n and toks[i].kind == "IDENTIFIER"

    for i, t in enumerate(toks):
        k = t.kind
        if k in _DECL_KW:
            j = i + 1
            if k == "enum" and j < n and toks[j].kind in ("bit", "int"):
                # enum bit<N> Name
                depth = 0
                while j < n:
                    if toks[j].kind == "<":
                        depth += 1
                    elif toks[j].kind == ">":
                        depth -= 1
                        if depth == 0:
                            j += 1
                            break
                    j += 1
            if ident(j):
                names.add(toks[j].text)
        elif k == "extern":
            # extern object: extern Name [<...>] {   vs   extern RetType fname(...)
            if ident(i + 1):
                j = i + 2
                if j < n and toks[j].kind in ("<", "{"):
                    if toks[j].kind == "{":
                        names.add(toks[i + 1].text)
                    else:
                        depth = 0
                        while j < n:
                            if toks[j].kind == "<":
                                depth += 1
                            elif toks[j].kind == ">":
                                depth -= 1
                                if depth == 0:
                                    break
                            j += 1
                        if j + 1 < n and toks[j + 1].kind == "{":
                            names.add(toks[i + 1].text)
        elif k in ("typedef", "type") and (i == 0 or toks[i - 1].kind in (";", "}", "{",
                                                                         "ANNOTATION")):
            j = i + 1
            depth = 0
            while j < n and not (toks[j].kind == ";" and depth == 0):
                if toks[j].kind in ("(", "[", "{"):
                    depth += 1
                elif toks[j].kind in (")", "]", "}"):
                    depth -= 1
                j += 1
            if j < n and ident(j - 1):
                names.add(toks[j - 1].text)
        elif k == "<" and ident(i - 1) and i >= 2 and (
                toks[i - 2].kind in ("extern", "parser", "control", "package", "void", "bool",
                                     "IDENTIFIER", ">", "string", "int", "bit")):
            # candidate generic parameter list: Name < A, B > ( or {
            j, params = i + 1, []
            while ident(j):
                params.append(toks[j].text)
                if j + 1 < n and toks[j + 1].kind == ",":
                    j += 2
                    continue
                j += 1
                break
            if params and j < n and toks[j].kind == ">" and j + 1 < n and toks[j + 1].kind in ("(", "{"):
                start, end = _decl_range(toks, i)
                for p in params:
                    generics.append((p, start, end))
    return names, generics


def _decl_range(toks: list[Tok], i: int) -> tuple[int, int]:
    depth = 0
    s = i
    while s > 0:
        k = toks[s - 1].kind
        if k in (")", "]"):
            depth += 1
        elif k in ("(", "["):
            depth -= 1
        elif depth == 0 and k in (";", "{", "}"):
            break
        s -= 1
    depth = 0
    e = i
    opened_brace = False
    while e < len(toks):
        k = toks[e].kind
        if k in ("(", "[", "{"):
            if k == "{" and depth == 0:
                opened_brace = True
            depth += 1
        elif k in (")", "]", "}"):
            depth -= 1
            if depth == 0 and k == "}" and opened_brace:
                break
        elif k == ";" and depth == 0:
            break
        e += 1
    return s, e


def classify(toks: list[Tok]) -> list[Tok]:
    """Mark type names (TYPE_IDENTIFIER), type-argument ``<`` (L_ANGLE_T) and the first
    ``>`` of an adjacent ``>>`` (SHR_ANGLE)."""
    names, generics = _collect_type_names(toks)
    gen_by_name: dict[str, list[tuple[int, int]]] = {}
    for g, s, e in generics:
        gen_by_name.setdefault(g, []).append((s, e))
    n = len(toks)
    for i, t in enumerate(toks):
        if t.kind == "IDENTIFIER":
            nm = t.text
            if nm in names:
                # a type name used as a member/field name stays usable through `name`
                t.kind = "TYPE_IDENTIFIER"
            elif nm in gen_by_name and any(s <= i <= e for s, e in gen_by_name[nm]):
                t.kind = "TYPE_IDENTIFIER"
    for i, t in enumerate(toks):
        if t.kind == "<":
            prev = toks[i - 1].kind if i > 0 else ""
            nxt = toks[i + 1] if i + 1 < n else None
            if prev in ("bit", "int", "varbit"):
                t.kind = "L_ANGLE_T"
            elif nxt is not None and (
                    nxt.kind in TYPE_START_KW or nxt.kind == "DONTCARE"
                    or (nxt.kind == "TYPE_IDENTIFIER"
                        and not (i + 2 < n and toks[i + 2].kind in (".", "(")))):
                if not (nxt.kind == "error" and i + 2 < n and toks[i + 2].kind == "."):
                    t.kind = "L_ANGLE_T"
        elif t.kind == ">":
            if i + 1 < n and toks[i + 1].kind == ">" and toks[i + 1].pos == t.pos + 1:
                t.kind = "SHR_ANGLE"
    return toks
