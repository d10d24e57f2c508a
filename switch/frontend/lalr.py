"""A lean LALR(1) driver over lark's parse table: the same trees, a fraction of the cost.

Why not ``Lark.parse``: with ``propagate_positions`` lark spends most of a large parse in
its per-reduction wrapper chain (child filter, single-child expansion, position
propagation through ``getattr`` on dictionary-backed ``Meta`` objects), and those ``Meta``
dictionaries were most of the memory of a 660,000-token program.  This driver walks the
table lark built from ``grammar.lark`` and shapes each reduction with one precomputed
closure per rule, giving the trees ``Lark.parse`` gives in a lighter form: the same
``data``, children, ``None`` placeholders and positions, in slotted ``tree.ParseNode``s
whose leaves are the lexer's own ``Tok``s (lark's ``Tree``, ``Meta`` and ``Token`` made a
large program's tree three times its size; ``tests/unit/test_frontend_lalr.py`` compares
the two node for node).  A node's position is its first and last token, which is all
error locations and source excerpts read.  The many single-child reductions of the
expression precedence chain (``?expr: ternary``, ...) change no value, so they cost a
table lookup and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lark import Token
from lark.exceptions import UnexpectedToken
from lark.parsers.lalr_analysis import Shift

from .lexer import Tok
from .tree import ParseNode

_new_str = str.__new__


def to_token(t: Tok) -> Token:
    """The lark ``Token`` of a lexer token whose ``kind`` is already its terminal name
    (for lark's ``UnexpectedToken``, which the error messages read)."""
    tok = _new_str(Token, t.text)
    n = len(t.text)
    col = t.col
    tok.type = t.kind
    tok.value = t.text
    tok.start_pos = t.pos
    tok.line = t.line
    tok.column = col
    tok.end_line = t.line
    tok.end_column = col + n
    tok.end_pos = t.pos + n
    return tok


def _start(v: Any) -> Tok | None:
    """First token of a raw child (lark's container start), or None when it is empty."""
    if type(v) is ParseNode:
        o = v.outer
        return v.first if o is None else o[0]
    if type(v) is Tok:
        return v
    return None


def _end(v: Any) -> Tok | None:
    if type(v) is ParseNode:
        o = v.outer
        return v.last if o is None else o[1]
    if type(v) is Tok:
        return v
    return None


Builder = Callable[[list[Any]], Any]


def _builder(rule: Any, maybe_placeholders: bool) -> Builder | None:
    """The closure that turns a reduction's raw children into lark's node for ``rule``
    (lark's ``ParseTreeBuilder`` chain: child filter with placeholders, ``?rule``
    single-child expansion, position propagation); None for a reduction that returns
    its only child unchanged."""
    expansion = rule.expansion
    opts = rule.options
    keep_all = opts.keep_all_tokens
    expand1 = bool(opts.expand1) and not rule.alias
    name = rule.alias or opts.template_source or rule.origin.name
    empty_indices = opts.empty_indices if maybe_placeholders else None
    if empty_indices:
        bits = "".join(str(int(b)) for b in empty_indices)
        nones = [len(ones) for ones in bits.split("0")]
    else:
        nones = [0] * (len(expansion) + 1)
    plan: list[tuple[int, bool, int]] = []  # (child index, splice its children, Nones before)
    pending = 0
    for i, sym in enumerate(expansion):
        pending += nones[i]
        if keep_all or not (sym.is_term and sym.filter_out):
            plan.append((i, not sym.is_term and sym.name.startswith("_"), pending))
            pending = 0
    tail = pending + nones[len(expansion)]
    if expand1 and len(expansion) == 1 and plan == [(0, False, 0)] and tail == 0:
        return None
    simple = all(not splice and not nb for _, splice, nb in plan) and tail == 0
    idx = [i for i, _, _ in plan]
    whole = simple and idx == list(range(len(expansion)))

    def build(raw: list[Any]) -> Any:
        if whole:
            kids = raw
        elif simple:
            kids = [raw[i] for i in idx]
        else:
            kids = []
            for i, splice, nb in plan:
                if nb:
                    kids += [None] * nb
                if splice:  # a left-recursive ``_list``: extend its list, not a copy of it
                    if kids:
                        kids += raw[i].children
                    else:
                        kids = raw[i].children
                else:
                    kids.append(raw[i])
            if tail:
                kids += [None] * tail
        first = last = None
        for c in raw:
            first = _start(c)
            if first is not None:
                break
        if first is not None:
            for c in reversed(raw):
                last = _end(c)
                if last is not None:
                    break
        if expand1 and len(kids) == 1:
            res = kids[0]
            if type(res) is ParseNode and first is not None:
                if res.first is None:
                    res.first, res.last = first, last
                elif res.first is not first or res.last is not last:
                    res.outer = (first, last)  # type: ignore[assignment]
            return res
        return ParseNode(name, kids, first, last)

    return build


class Driver:
    """Parses a list of lexer tokens (``kind`` = terminal name) with a lark LALR table."""

    def __init__(self, lark_parser: Any) -> None:
        inner = lark_parser.parser.parser.parser
        table = inner.parse_table
        self.start_state: int = table.start_states["start"]
        self.end_state: int = table.end_states["start"]
        mp = bool(lark_parser.options.maybe_placeholders)
        # per state: terminal -> shift target (int) or reduction (size, goto symbol, builder)
        rules: dict[int, tuple[int, str, Builder | None]] = {}
        self.actions: dict[int, dict[str, Any]] = {}
        for state, acts in table.states.items():
            row: dict[str, Any] = {}
            for sym, (action, arg) in acts.items():
                if action is Shift:
                    row[sym] = arg
                else:
                    red = rules.get(id(arg))
                    if red is None:
                        red = rules[id(arg)] = (len(arg.expansion), arg.origin.name, _builder(arg, mp))
                    row[sym] = red
            self.actions[state] = row
        self._keep = [acts for acts in table.states.values()]  # rules stay alive with their ids

    def parse(self, toks: list[Tok]) -> Any:
        """The tree of ``toks``, which it consumes (emptied as it goes, so that a token
        the tree does not keep is freed once shifted); raises lark's UnexpectedToken."""
        actions = self.actions
        states = [self.start_state]
        values: list[Any] = []
        push_state, push_value = states.append, values.append
        row = actions[self.start_state]
        toks.reverse()
        pop = toks.pop
        tok = None
        while toks:
            tok = pop()
            kind = tok.kind
            while True:
                act = row.get(kind)
                if act is None:
                    raise self._error(row, to_token(tok))
                if type(act) is int:
                    push_state(act)
                    push_value(tok)
                    row = actions[act]
                    break
                size, origin, build = act
                if build is None:  # single child kept as it is
                    states[-1] = actions[states[-2]][origin]
                else:
                    if size:
                        raw = values[-size:]
                        del values[-size:]
                        del states[-size:]
                    else:
                        raw = []
                    push_value(build(raw))
                    push_state(actions[states[-1]][origin])
                row = actions[states[-1]]
        end_state = self.end_state
        while True:
            act = row.get("$END")
            if act is None or type(act) is int:
                end = Token.new_borrow_pos("$END", "", to_token(tok)) if tok else Token("$END", "", 0, 1, 1)
                raise self._error(row, end)
            size, origin, build = act
            if build is None:
                states[-1] = actions[states[-2]][origin]
            else:
                if size:
                    raw = values[-size:]
                    del values[-size:]
                    del states[-size:]
                else:
                    raw = []
                push_value(build(raw))
                push_state(actions[states[-1]][origin])
            if states[-1] == end_state:
                return values[-1]
            row = actions[states[-1]]

    @staticmethod
    def _error(row: dict[str, Any], token: Token) -> UnexpectedToken:
        expected = {s for s in row if s.isupper()}
        return UnexpectedToken(token, expected)
