"""Text to parse tree: lexer pass plus an LALR parse, with located syntax errors.

Why lark with a custom lexer: lark turns ``grammar.lark`` into an LALR(1) table, while
the token classification P4 needs (type names, ``<`` of type arguments, ``>>``) lives in
``lexer.py``.  The table is run by ``lalr.Driver``, which builds the trees lark would, as
slotted ``tree.ParseNode``s over the lexer's ``Tok``s, at a fraction of ``Lark.parse``'s
time and memory (a 660,000-token program is parsed in seconds, its tree ~120 MB).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable
from pathlib import Path

from lark import Lark, Token
from lark.exceptions import UnexpectedInput, UnexpectedToken
from lark.lexer import Lexer

from . import lexer as lx
from .errors import P4Error
from .ir import Annotation, Loc
from .lalr import Driver
from .preprocess import Preprocessed
from .symbols import did_you_mean
from .tree import ParseNode

_GRAMMAR = Path(__file__).with_name("grammar.lark")
_lock = threading.Lock()
_parser: Lark | None = None
_driver: Driver | None = None
_kind_to_terminal: dict[str, str] = {}


class _TokenFeed(Lexer):
    """lark 'lexer' that replays the tokens produced by ``lexer.py``."""

    def __init__(self, lexer_conf: object) -> None:
        pass

    def lex(self, data: list[Token]) -> list[Token]:  # type: ignore[override]
        return data


def _get_parser() -> Lark:
    """lark's LALR parser for ``grammar.lark``: its table and rules drive ``lalr.Driver``."""
    global _parser
    with _lock:
        if _parser is None:
            p = Lark(_GRAMMAR.read_text(), parser="lalr", lexer=_TokenFeed,
                     propagate_positions=True, maybe_placeholders=True, cache=True)
            for td in p.terminals:
                if td.pattern.type == "str":
                    _kind_to_terminal[td.pattern.value] = td.name
            _parser = p
        return _parser


def _get_driver() -> Driver:
    global _driver
    parser = _get_parser()
    with _lock:
        if _driver is None:
            _driver = Driver(parser)
        return _driver


@dataclass
class ParseResult:
    tree: ParseNode
    annotations: list[lx.AnnotationTok]
    pp: Preprocessed


_RENAME = {"L_ANGLE_T": "_LT_T", "SHR_ANGLE": "_SHR"}
_NICE = {"_LT_T": "'<'", "_SHR": "'>'", "IDENTIFIER": "identifier", "TYPE_IDENTIFIER": "type name", "INTEGER": "integer",
         "STRING_LITERAL": "string", "ASSIGN_OP": "'op='", "$END": "end of file"}


def parse(pp: Preprocessed) -> ParseResult:
    """Parse preprocessed text; raises P4Error for lexical and syntax errors."""
    driver = _get_driver()
    store: list[lx.AnnotationTok] = []
    toks = _lex(pp, store)
    to_terminal(toks)
    try:
        tree = driver.parse(toks)  # consumes toks
    except UnexpectedToken as e:
        toks = _lex(pp, [])  # again, for the message's look at the neighbours
        tok = e.token
        if tok.type == "$END":
            last = toks[-1] if toks else None
            loc = pp.loc(last.line, last.col) if last else pp.loc(1, 1)
            what = "end of input"
        else:
            loc = pp.loc(tok.line, tok.column)
            what = f"'{tok.value}'" if tok.type != "ANNOTATION" else "annotation"
            idx = next((i for i, t in enumerate(toks) if t.pos == tok.start_pos), -1)
            before = toks[idx - 1] if idx > 0 else None
            if (before is not None and before.line < tok.line
                    and any(_pretty(x) == "';'" for x in (e.expected or ()))):  # the line above is not ended
                end = pp.loc(before.line, before.col + len(before.text))
                raise P4Error(end, f"syntax error: expected ';' after '{before.text}' (the next line starts with "
                                   f"{what})", pp.source_line(end)) from None
            prev = None
            if tok.type == "IDENTIFIER" and idx > 0 and toks[idx - 1].kind == "IDENTIFIER":
                prev = toks[idx - 1]
            elif tok.type == "IDENTIFIER" and 0 <= idx < len(toks) - 1 and \
                    toks[idx + 1].kind == "IDENTIFIER":
                prev = toks[idx]
            if prev is not None:
                ploc = pp.loc(prev.line, prev.col)
                names = sorted({t.text for t in toks if t.kind == "TYPE_IDENTIFIER"})
                raise P4Error(ploc, f"unknown type '{prev.text}'." + did_you_mean(prev.text, names),
                              pp.source_line(ploc)) from None
        expected = sorted(_pretty(x) for x in (e.expected or ()))[:8]
        msg = f"syntax error: unexpected {what}"
        if expected:
            msg += "; expected " + ", ".join(expected)
        raise P4Error(loc, msg, pp.source_line(loc)) from None
    except UnexpectedInput as e:  # pragma: no cover - other lark failures
        loc = pp.loc(getattr(e, "line", 1), getattr(e, "column", 1))
        raise P4Error(loc, f"syntax error: {e}", pp.source_line(loc)) from None
    return ParseResult(tree, store, pp)


def parse_annotation_body(body: list[lx.Tok], is_type: Callable[[str], bool]) -> ParseNode | None:
    """A structured annotation's body (``@a[1, x == y]``, ``@a[k = v]``) as one list or
    struct expression tree, so that its values are typed like any expression; None when
    it is empty or does not parse as one (the annotation's own checks report that).
    ``is_type`` tells which identifiers name types where the annotation stands."""
    if not body:
        return None
    first = body[0]

    def synthetic(text: str) -> lx.Tok:
        return lx.Tok(text, text, first.pos, first.row)

    toks = [synthetic("const"), synthetic("bool"), lx.Tok("IDENTIFIER", "annotation", first.pos, first.row),
            synthetic("="), synthetic("{")]
    for t in body:
        kind = "TYPE_IDENTIFIER" if t.kind == "IDENTIFIER" and is_type(t.text) else t.kind
        if kind == "<" and toks[-1].kind in ("bit", "int", "varbit"):
            kind = "L_ANGLE_T"
        toks.append(lx.Tok(kind, t.text, t.pos, t.row))
    toks += [synthetic("}"), synthetic(";")]
    to_terminal(toks)
    try:
        tree = _get_driver().parse(toks)
    except UnexpectedInput:
        return None
    value: ParseNode = tree.children[0].children[-1]
    return value


def _lex(pp: Preprocessed, store: list[lx.AnnotationTok]) -> list[lx.Tok]:
    try:
        return lx.classify(lx.fold_annotations(lx.tokenize(pp.text), pp.text, store))
    except lx.LexError as e:
        loc = pp.loc(e.line, e.col)
        raise P4Error(loc, e.message, pp.source_line(loc)) from None


def to_terminal(toks: list[lx.Tok]) -> None:
    """Rename each token's kind to its grammar terminal (keywords and punctuation by their
    text, the lexer's type-argument ``<`` and ``>>`` marks by ``_RENAME``)."""
    m = _kind_to_terminal
    r = _RENAME
    for t in toks:
        k = t.kind
        t.kind = m.get(k) or r.get(k, k)


def _pretty(term: str) -> str:
    if term in _NICE:
        return _NICE[term]
    for k, v in _kind_to_terminal.items():
        if v == term:
            return f"'{k}'"
    return term


# ----------------------------------------------------------------------------- literals


def parse_int(text: str) -> tuple[int, int | None, bool]:
    """Integer literal -> (value, width or None, signed).  ``8w5``, ``16s-3``, ``0x1F``,
    ``0b1010``, ``0o17``, ``1_000``."""
    t = text.replace("_", "")
    width: int | None = None
    signed = False
    low = t.lower()
    for sep in ("w", "s"):
        idx = low.find(sep)
        if idx > 0 and low[:idx].isdigit() and not low.startswith("0x"):
            width = int(t[:idx])
            signed = sep == "s"
            t = t[idx + 1:]
            break
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    lt = t.lower()
    if lt.startswith("0x"):
        v = int(t[2:], 16)
    elif lt.startswith("0b"):
        v = int(t[2:], 2)
    elif lt.startswith("0o"):
        v = int(t[2:], 8)
    elif lt.startswith("0d"):
        v = int(t[2:], 10)
    else:
        v = int(t, 10)
    return (-v if neg else v), width, signed


def unescape_string(text: str) -> str:
    """Body of a string literal token (quotes removed, simple escapes resolved)."""
    body = text[1:-1]
    return body.encode("utf-8").decode("unicode_escape") if "\\" in body else body


def convert_annotation(a: lx.AnnotationTok) -> Annotation:
    """Turn a folded annotation into ``ir.Annotation`` with parsed values."""
    parts: list[list[lx.Tok]] = [[]]
    depth = 0
    for t in a.body:
        if t.kind in ("(", "[", "{"):
            depth += 1
        elif t.kind in (")", "]", "}"):
            depth -= 1
        if t.kind == "," and depth == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    values: list[object] = []
    for p in parts:
        if not p:
            continue
        values.append(_anno_value(p))
    return Annotation(a.name, tuple(values), a.text)


def _anno_value(p: list[lx.Tok]) -> object:
    try:
        return _anno_value_of(p)
    except ValueError:  # an integer too long to convert: kept as its text
        return " ".join(t.text for t in p)


def _anno_value_of(p: list[lx.Tok]) -> object:
    if len(p) == 1:
        t = p[0]
        if t.kind == "STRING_LITERAL":
            return unescape_string(t.text)
        if t.kind == "INTEGER":
            return parse_int(t.text)[0]
        return t.text
    if len(p) == 2 and p[0].kind == "-" and p[1].kind == "INTEGER":
        return -parse_int(p[1].text)[0]
    if len(p) >= 3 and p[1].kind == "=":
        return (p[0].text, _anno_value(p[2:]))
    return " ".join(t.text for t in p)


def tree_loc(pp: Preprocessed, node: ParseNode | lx.Tok) -> Loc:
    """Original location of a tree node or token."""
    if isinstance(node, lx.Tok):
        return pp.loc(node.line, node.col)
    first = node.first
    if first is None:
        for ch in node.children:
            if isinstance(ch, (ParseNode, lx.Tok)):
                return tree_loc(pp, ch)
        return pp.loc(0, 0)
    return pp.loc(first.line, first.col)
