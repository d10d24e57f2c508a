"""``lalr.Driver`` builds the trees lark's own ``Lark.parse`` builds (with
``propagate_positions``), node for node, positions included, and fails where it fails.
The driver's nodes are ``ParseNode``s with the lexer's ``Tok``s as leaves (lighter than
lark's ``Tree``/``Token``): each is compared with lark's on everything lark's has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lark import Token, Tree
from lark.exceptions import UnexpectedToken

from innet.switch.frontend import lexer as lx
from innet.switch.frontend import parse as fp
from innet.switch.frontend.preprocess import preprocess_file, preprocess_source
from innet.switch.frontend.tree import ParseNode

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted([*(ROOT / "p4" / "examples").glob("*.p4"), *(ROOT / "tests" / "data").glob("*.p4"),
                   ROOT / "p4" / "innet.p4"])
PROGRAMS = [p for p in PROGRAMS if p.name != "agg2048.p4"]  # agg64.p4's shape, 4 s of lark

SNIPPETS = {
    "parens": "const bit<8> A = (1 + (2)) * ((3));\nconst bool B = !(A == 3) && (A > 1);\n",
    "empty params and placeholders": ("extern E { E(); void f(in bit<8> x, out bit<8> y); }\n"
                                      "control C() { apply { } }\nC() c;\n"),
    "annotations": ("@name(\"n\") @hidden\nheader h_t { @a bit<8> x; bit<16> y; }\n"
                    "struct s_t { h_t h; }\n"),
    "statements": ("control C(inout bit<8> x) {\n  action a(bit<8> v) { x = v; x = x |+| 1; }\n"
                   "  table t { key = { x : exact; } actions = { a; } default_action = a(1); }\n"
                   "  apply { if (x == 0) { t.apply(); } else if (x > 2) { x = x << 1; } else { return; }\n"
                   "    switch (t.apply().action_run) { a: { } default: { x = 2; } }\n"
                   "    x = x[3:0] ++ x[7:4]; x = (bit<8>)(x >> 2); } }\n"),
    "end of input": "control C(inout bit<8> x) { apply { x = 1;",
    "unexpected token": "control C(inout bit<8> x) { apply { x = = 1; } }",
    "unknown type": "control C(inout foo_t x) { apply { } }",
}


def _reference_feed(toks: list[lx.Tok]) -> list[Token]:
    """The token list ``Lark.parse`` was fed before the driver (kinds not yet renamed)."""
    m = fp._kind_to_terminal
    return [Token(m.get(t.kind, fp._RENAME.get(t.kind, t.kind)), t.text, t.pos, t.line, t.col, t.line,
                  t.col + len(t.text), t.pos + len(t.text)) for t in toks]


def _outcome(parse: Any) -> tuple[Any, Any]:
    try:
        return parse(), None
    except UnexpectedToken as e:
        t = e.token
        return None, (t.type, str(t), t.line, t.column, t.start_pos, t.end_pos, sorted(e.expected))


def _same(a: Any, b: Any, path: str = "") -> None:
    """``a`` (the driver's) is ``b`` (lark's), node for node."""
    if isinstance(b, Tree):
        assert type(a) is ParseNode and a.data == b.data, path
        assert a.meta.empty == b.meta.empty, (path, a.data)
        if not a.meta.empty:
            for f in ("line", "column", "start_pos", "end_line", "end_column", "end_pos"):
                assert getattr(a.meta, f) == getattr(b.meta, f), (path, a.data, f)
        assert len(a.children) == len(b.children), (path, a.data)
        for i, (x, y) in enumerate(zip(a.children, b.children)):
            _same(x, y, f"{path}/{a.data}[{i}]")
    elif b is None:
        assert a is None, path
    else:
        assert type(b) is Token and type(a) is lx.Tok and str(a) == str(b), (path, a, b)
        for f in ("type", "value", "start_pos", "line", "column", "end_line", "end_column", "end_pos"):
            assert getattr(a, f) == getattr(b, f), (path, a, f)


def _compare(text: str) -> bool:
    toks = lx.classify(lx.fold_annotations(lx.tokenize(text), text, []))
    lark_parser = fp._get_parser()
    feed = _reference_feed(toks)
    ref, ref_err = _outcome(lambda: lark_parser.parse(feed))  # type: ignore[arg-type]
    fp.to_terminal(toks)
    got, got_err = _outcome(lambda: fp._get_driver().parse(toks))
    assert got_err == ref_err
    if ref_err is None:
        _same(got, ref)
    return ref_err is None


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_same_tree_as_lark(path: Path) -> None:
    assert _compare(preprocess_file(path, (), {"INNET_K": "4"} if path.name == "innet.p4" else None).text)


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_same_tree_or_error_on_snippets(name: str) -> None:
    parsed = _compare(preprocess_source(SNIPPETS[name], "s.p4", (), None).text)
    assert parsed == (name not in ("end of input", "unexpected token", "unknown type"))
