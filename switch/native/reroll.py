"""Loop rerolling of generated C: runs of statements equal up to an arithmetic progression
of their integer literals become one ``for`` loop.

Why: programs that repeat per-element code (``p4/innet``'s ``INNET_FOR_EACH``: one header
field, one register array per element) reach the generator as thousands of statements
that differ only in slot numbers and register columns. As straight-line C they cost a
call-free but branchy, cache-unfriendly instruction stream per element and minutes of C
compile time; as a loop over contiguous slots (and, with the fused register layout of
``fuse``, contiguous register cells) the compiler vectorises them.

The rewrite is textual and checked, not inferred: statement k of a run is accepted only if
its C text equals the text of the first with every varying literal ``v`` replaced by
``v0 + k * d``; the loop body is the first statement's text with those literals replaced by
the same expression of the loop index. So the loop runs exactly the statements it
replaces, in order. Temporaries a statement declares (``u64 _t12``) are compared up to
renaming. Not rerolled: text with ``break``/``continue``/``case``/``default`` or labels
(they would bind differently inside a loop), floating-point or suffix-typed literals that
vary.

Inside a loop, slots ``S[K]`` read or written at a constant index are promoted to C locals
(loaded before the loop, stored after it when written) and ``sw_blk_(c, N)`` register
block pointers are hoisted, so that the loop body touches memory only through the
progressions; this is what lets gcc vectorise it. Promotion is skipped when the body could
reach a slot another way: ``S`` passed to a call or its address taken, a slot index that
is neither a constant nor a progression, ``return``/``goto`` (an early exit would skip the
store after the loop), or a constant slot inside a progression's range.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MIN_REPS = 4
"""Fewest repetitions worth a loop."""
MAX_PERIOD = 16
"""Most statements in one repeated group (innet's momentum step has 7)."""

_STR = r'"(?:[^"\\]|\\.)*"|' + r"'(?:[^'\\]|\\.)*'"
_ID = r"[A-Za-z_][A-Za-z0-9_]*"
_NUM = r"0[xX][0-9a-fA-F]+[uUlL]*|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?[uUlLfF]*"
_TOKEN = re.compile(f"(?P<str>{_STR})|(?P<id>{_ID})|(?P<num>{_NUM})|(?P<ws>\\s+)|(?P<op>.)", re.S)
_WORDS = re.compile(f"({_STR}|{_ID}|{_NUM})", re.S)
"""Splits text into gaps and words (strings, identifiers, literals), as ``_TOKEN`` does."""
_DECLARED = re.compile(r"(?:\b(?:u64|u32|u16|u8|int|unsigned|i64|double)\s*\*?|__typeof__\([^()]*\))\s*"
                       r"(_[A-Za-z]+[0-9]+)\b")
"""A local's name where it is declared (``u64 _t3``, ``u64 *_r4``, ``__typeof__(c->pos) _r5``)."""
_REFUSE = re.compile(r"\b(?:break|continue|case|default)\b|^\s*[A-Za-z_][A-Za-z0-9_]*\s*:(?!:)", re.M)
_DIGIT = re.compile(r"[0-9]")
_INT_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # id, int (plain decimal), ull (…ULL), num (any other literal), str, ws, op, prog
    text: str
    value: int = 0


def _literal(t: str) -> tuple[str, int]:
    """(kind, value) of a numeric literal: int (plain decimal), ull (a ULL suffix), num."""
    if t.isdigit():
        return "int", int(t)
    body = t.rstrip("uUlL")
    if t[len(body):].upper() == "ULL" and re.fullmatch(r"0[xX][0-9a-fA-F]+|[0-9]+", body):
        return "ull", int(body, 0) if not body.isdigit() else int(body)
    return "num", 0


def _tokens(text: str) -> list[_Tok]:
    out = []
    for m in _TOKEN.finditer(text):
        kind, t = m.lastgroup or "op", m.group()
        if kind == "num":
            kind, value = _literal(t)
            out.append(_Tok(kind, t, value))
        else:
            out.append(_Tok(kind, t))
    return out


@dataclass
class _Stmt:
    """One generated statement: its shape (literals abstracted, declared locals renamed)
    and its literals in order."""

    lines: list[str]
    shape: str
    nums: list[str]
    ok: bool  # rerollable at all
    _values: list[tuple[str, int]] | None = None

    def values(self) -> list[tuple[str, int]]:
        if self._values is None:
            self._values = [_literal(t) for t in self.nums]
        return self._values


def _analyse(lines: list[str]) -> _Stmt:
    text = "\n".join(lines)
    ok = _REFUSE.search(text) is None
    if _DIGIT.search(text) is None:
        return _Stmt(lines, text, [], ok)
    declared = {name: f"_L{i}" for i, name in enumerate(dict.fromkeys(_DECLARED.findall(text)))}
    parts = _WORDS.split(text)
    nums = []
    for i in range(1, len(parts), 2):
        w = parts[i]
        c = w[0]
        if c.isdigit():
            nums.append(w)
            parts[i] = "#" if w.isdigit() or w.upper().endswith("ULL") else w
        elif w in declared:
            parts[i] = declared[w]
    return _Stmt(lines, "\x00".join(parts), nums, ok)


def compress(stmts: Sequence[list[str]], fresh: Callable[[], str]) -> list[str]:
    """The lines of ``stmts`` (one list of C lines per statement, in order) with every
    run of at least ``MIN_REPS`` repetitions of a group of up to ``MAX_PERIOD``
    statements that differ only by literal progressions replaced by a loop. ``fresh``
    returns a new identifier (unique in the function) for loop indexes and locals."""
    if len(stmts) < MIN_REPS:
        return [ln for s in stmts for ln in s]
    info = [_analyse(list(s)) for s in stmts]
    ids: dict[str, int] = {}
    shape_id = [ids.setdefault(s.shape, len(ids)) if s.ok else -1 - i for i, s in enumerate(info)]
    out: list[str] = []
    n = len(info)
    j = 0
    while j < n:
        best: tuple[int, int] | None = None
        for p in range(1, min(MAX_PERIOD, (n - j) // MIN_REPS) + 1):
            if best is not None and p * MIN_REPS > best[0] * best[1]:
                break
            if shape_id[j + p:j + 2 * p] != shape_id[j:j + p]:
                continue
            r = 2
            while j + (r + 1) * p <= n and shape_id[j + r * p:j + (r + 1) * p] == shape_id[j:j + p]:
                r += 1
            if r < MIN_REPS:
                continue
            r = _affine_prefix(info, j, p, r)
            if r >= MIN_REPS and (best is None or r * p > best[0] * best[1]):
                best = (p, r)
        if best is None:
            out.extend(info[j].lines)
            j += 1
            continue
        p, r = best
        out.extend(_loop(info, j, p, r, fresh))
        j += p * r
    return out


def _group_nums(info: list[_Stmt], start: int, p: int) -> list[tuple[str, int]]:
    return [v for s in info[start:start + p] for v in s.values()]


def _group_texts(info: list[_Stmt], start: int, p: int) -> list[str]:
    return [t for s in info[start:start + p] for t in s.nums]


def _affine_prefix(info: list[_Stmt], j: int, p: int, r: int) -> int:
    """How many of the ``r`` repetitions from ``j`` follow the progressions set by the
    first two (0 when the first two do not differ at all or differ in a literal that may
    not vary)."""
    ta, tb = _group_texts(info, j, p), _group_texts(info, j + p, p)
    a, b = _group_nums(info, j, p), _group_nums(info, j + p, p)
    deltas: dict[int, int] = {}
    for q, (xt, yt, (xk, xv), (yk, yv)) in enumerate(zip(ta, tb, a, b)):
        if xt != yt:
            if xk not in ("int", "ull") or xk != yk:
                return 0
            deltas[q] = yv - xv
    if not deltas:
        return 0
    fixed = [q for q in range(len(ta)) if q not in deltas]
    same = operator.itemgetter(*fixed) if fixed else (lambda _: ())
    want = same(ta)
    for k in range(2, r):
        tc = _group_texts(info, j + k * p, p)
        if same(tc) != want:
            return k
        for q, d in deltas.items():
            kind, value = _literal(tc[q])
            if kind != a[q][0] or value != a[q][1] + k * d or (kind == "int" and value > _INT_MAX):
                return k
    return r


def _progression(t: _Tok, d: int, i: str) -> str:
    sign, m = ("+", d) if d > 0 else ("-", -d)
    if t.kind == "int":
        return f"({t.text} {sign} {i} * {m})"
    return f"({t.text} {sign} (u64){i} * {m}ULL)"


def _loop(info: list[_Stmt], j: int, p: int, r: int, fresh: Callable[[], str]) -> list[str]:
    group = info[j:j + p]
    deltas = [y[1] - x[1] for x, y in zip(_group_nums(info, j, p), _group_nums(info, j + p, p))]
    i = fresh()
    toks: list[_Tok] = []
    prog: dict[int, tuple[int, int]] = {}  # token index -> (first value, delta)
    q = 0  # literal number within the group
    for s in group:
        if toks:
            toks.append(_Tok("ws", "\n"))
        for t in _tokens("\n".join(s.lines)):
            if t.kind in ("int", "ull", "num"):
                d = deltas[q]
                q += 1
                if d:
                    prog[len(toks)] = (t.value, d)
                    toks.append(_Tok("prog", _progression(t, d, i)))
                    continue
            toks.append(t)
    first_line = group[0].lines[0] if group[0].lines else ""
    indent = first_line[:len(first_line) - len(first_line.lstrip(" "))]
    pre, post, toks = _promote(toks, prog, r, fresh)
    body = "".join(t.text for t in toks).split("\n")
    lines = [indent + "{"]
    lines += [indent + "    " + x for x in pre]
    lines.append(f"{indent}    for (int {i} = 0; {i} < {r}; {i}++) {{")
    lines += ["        " + ln for ln in body]
    lines.append(indent + "    }")
    lines += [indent + "    " + x for x in post]
    lines.append(indent + "}")
    return lines


def _skip_ws(toks: list[_Tok], k: int, step: int) -> int:
    while 0 <= k < len(toks) and toks[k].kind == "ws":
        k += step
    return k


def _promote(toks: list[_Tok], prog: dict[int, tuple[int, int]], r: int, fresh: Callable[[], str]
             ) -> tuple[list[str], list[str], list[_Tok]]:
    """Constant-index slots into locals, register block pointers hoisted (module doc);
    returns (lines before the loop, lines after it, the new body tokens)."""
    const: dict[int, list[int]] = {}   # slot -> token indexes of its ``S`` tokens
    ranges: list[tuple[int, int]] = []  # progressions of slot indexes: (first, delta)
    blocks: dict[str, list[int]] = {}  # block number -> token indexes of ``sw_blk_``
    for k, t in enumerate(toks):
        if t.kind == "id" and t.text in ("return", "goto"):
            return [], [], toks
        if t.kind == "id" and t.text == "sw_blk_":
            args = [x for x in toks[k + 1:k + 9] if x.kind != "ws"]
            if len(args) >= 5 and [x.text for x in args[:3]] == ["(", "c", ","] and args[3].kind == "int" \
                    and args[4].text == ")":
                blocks.setdefault(args[3].text, []).append(k)
            continue
        if not (t.kind == "id" and t.text == "S"):
            continue
        before = _skip_ws(toks, k - 1, -1)
        if before >= 0 and toks[before].text == "&":
            return [], [], toks
        a = k + 1
        if a + 2 >= len(toks) or toks[a].text != "[" or toks[a + 2].text != "]":
            return [], [], toks
        idx = toks[a + 1]
        if idx.kind == "int":
            const.setdefault(idx.value, []).append(k)
        elif idx.kind == "prog":
            ranges.append(prog[a + 1])
        else:
            return [], [], toks
    pre: list[str] = []
    post: list[str] = []
    new = list(toks)
    drop: set[int] = set()
    for slot, where in const.items():
        if any(d and (slot - v0) % d == 0 and 0 <= (slot - v0) // d < r for v0, d in ranges):
            continue
        name = fresh()
        pre.append(f"u64 {name} = S[{slot}];")
        written = False
        for k in where:
            new[k] = _Tok("id", name)
            drop.update((k + 1, k + 2, k + 3))
            nxt = _skip_ws(toks, k + 4, 1)
            after = "".join(x.text for x in toks[nxt:nxt + 3]) if nxt < len(toks) else ""
            if re.match(r"(\+\+|--|(<<|>>|[-+*/%&|^])?=(?!=))", after):
                written = True
            prv = _skip_ws(toks, k - 1, -1)
            if prv >= 1 and toks[prv].text in ("+", "-") and toks[prv - 1].text == toks[prv].text:
                written = True
        if written:
            post.append(f"S[{slot}] = {name};")
    for blk, where in blocks.items():
        name = fresh()
        pre.append(f"u64 *{name} = sw_blk_(c, {blk});")
        for k in where:
            new[k] = _Tok("id", name)
            end = k + 1
            closing = 0
            while closing < 1:
                if toks[end].text == ")":
                    closing += 1
                drop.add(end)
                end += 1
    body = [t for k, t in enumerate(new) if k not in drop]
    more, body = _hoist_ctx(body, fresh)
    return pre + more, post, body


def _hoist_ctx(toks: list[_Tok], fresh: Callable[[], str]) -> tuple[list[str], list[_Tok]]:
    """``c->pos``, ``c->ob`` ... read in the loop into locals, when the body uses ``c``
    for nothing else (no call receives it, no field of it is assigned)."""
    fields: dict[str, list[int]] = {}
    for k, t in enumerate(toks):
        if not (t.kind == "id" and t.text == "c"):
            continue
        if k + 2 >= len(toks) or toks[k + 1].text != "-" or toks[k + 2].text != ">" or k + 3 >= len(toks) \
                or toks[k + 3].kind != "id":
            return [], toks
        nxt = _skip_ws(toks, k + 4, 1)
        after = "".join(x.text for x in toks[nxt:nxt + 3]) if nxt < len(toks) else ""
        if re.match(r"(\+\+|--|(<<|>>|[-+*/%&|^])?=(?!=)|\[|\.)", after):
            return [], toks
        prv = _skip_ws(toks, k - 1, -1)
        if prv >= 1 and toks[prv].text in ("+", "-", "&") and (toks[prv].text == "&" or
                                                               toks[prv - 1].text == toks[prv].text):
            return [], toks
        fields.setdefault(toks[k + 3].text, []).append(k)
    pre = []
    new = list(toks)
    drop: set[int] = set()
    for name, where in fields.items():
        local = fresh()
        pre.append(f"__typeof__(c->{name}) {local} = c->{name};")
        for k in where:
            new[k] = _Tok("id", local)
            drop.update((k + 1, k + 2, k + 3))
    return pre, [t for k, t in enumerate(new) if k not in drop]
