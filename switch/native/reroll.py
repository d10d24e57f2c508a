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

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MIN_REPS = 4
"""Fewest repetitions worth a loop."""
MAX_PERIOD = 16
"""Most statements in one repeated group (innet's momentum step has 7)."""

_TOKEN = re.compile(r"""
  (?P<id>[A-Za-z_][A-Za-z0-9_]*)
| (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?[uUlLfF]*)
| (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
| (?P<ws>\s+)
| (?P<op>.)
""", re.X | re.S)
_DECL_TYPES = frozenset({"u64", "u32", "u16", "u8", "int", "unsigned", "i64", "double"})
_LOCAL = re.compile(r"_[A-Za-z]+[0-9]+$")
_REFUSE = frozenset({"break", "continue", "case", "default"})
_INT_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # id, int (plain decimal), ull (…ULL), num (any other literal), str, ws, op
    text: str
    value: int = 0


def _tokens(text: str) -> list[_Tok]:
    out = []
    for m in _TOKEN.finditer(text):
        kind, t = m.lastgroup or "op", m.group()
        if kind == "num":
            if t.isdigit():
                out.append(_Tok("int", t, int(t)))
                continue
            body = t.rstrip("uUlL")
            if t[len(body):].upper() == "ULL" and re.fullmatch(r"0[xX][0-9a-fA-F]+|[0-9]+", body):
                out.append(_Tok("ull", t, int(body, 0) if not body.isdigit() else int(body)))
                continue
        out.append(_Tok(kind, t))
    return out


@dataclass
class _Stmt:
    """One generated statement: its tokens, its shape (literals abstracted, declared
    locals renamed) and its literal values in order."""

    lines: list[str]
    toks: list[_Tok]
    shape: tuple[str, ...]
    nums: list[_Tok]
    ok: bool  # rerollable at all


def _analyse(lines: list[str]) -> _Stmt:
    toks = _tokens("\n".join(lines))
    declared: dict[str, str] = {}
    ok = True
    for i, t in enumerate(toks):
        if t.kind == "id":
            if t.text in _REFUSE:
                ok = False
            elif _LOCAL.match(t.text) and t.text not in declared and _after_type(toks, i):
                declared[t.text] = f"_L{len(declared)}"
        elif t.kind == "op" and t.text == ":" and _is_label(toks, i):
            ok = False
    shape = []
    nums = []
    for t in toks:
        if t.kind in ("int", "ull", "num"):
            nums.append(t)
            shape.append("#" + t.kind if t.kind != "num" else t.text)
        elif t.kind == "id":
            shape.append(declared.get(t.text, t.text))
        else:
            shape.append(t.text)
    return _Stmt(lines, toks, tuple(shape), nums, ok)


def _after_type(toks: list[_Tok], i: int) -> bool:
    """Token ``i`` is the name in a declaration (``u64 _t3``, ``u64 *_r4``)."""
    k = i - 1
    while k >= 0 and (toks[k].kind == "ws" or toks[k].text == "*"):
        k -= 1
    return k >= 0 and toks[k].kind == "id" and toks[k].text in _DECL_TYPES


def _is_label(toks: list[_Tok], i: int) -> bool:
    """``name :`` at the start of a line (a C label), not ``a ? b : c``."""
    j = i - 1
    while j >= 0 and toks[j].kind == "ws" and "\n" not in toks[j].text:
        j -= 1
    if j < 0 or toks[j].kind != "id":
        return False
    k = j - 1
    while k >= 0 and toks[k].kind == "ws" and "\n" not in toks[k].text:
        k -= 1
    return k < 0 or (toks[k].kind == "ws") or toks[k].text in (";", "{", "}")


def compress(stmts: Sequence[list[str]], fresh: Callable[[], str]) -> list[str]:
    """The lines of ``stmts`` (one list of C lines per statement, in order) with every
    run of at least ``MIN_REPS`` repetitions of a group of up to ``MAX_PERIOD``
    statements that differ only by literal progressions replaced by a loop. ``fresh``
    returns a new identifier (unique in the function) for loop indexes and locals."""
    if len(stmts) < MIN_REPS:
        return [ln for s in stmts for ln in s]
    info = [_analyse(list(s)) for s in stmts]
    ids: dict[tuple[str, ...], int] = {}
    shape_id = [ids.setdefault(s.shape, len(ids)) if s.ok else -1 - i for i, s in enumerate(info)]
    out: list[str] = []
    n = len(info)
    j = 0
    while j < n:
        best: tuple[int, int] | None = None
        for p in range(1, min(MAX_PERIOD, (n - j) // MIN_REPS) + 1):
            if best is not None and p * MIN_REPS > best[0] * best[1]:
                break
            r = 1
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
        out.extend(_loop(info[j:j + p], info, j, p, r, fresh))
        j += p * r
    return out


def _group_nums(info: list[_Stmt], start: int, p: int) -> list[_Tok]:
    return [t for s in info[start:start + p] for t in s.nums]


def _affine_prefix(info: list[_Stmt], j: int, p: int, r: int) -> int:
    """How many of the ``r`` repetitions from ``j`` follow the progressions set by the
    first two (0 when the first two do not differ at all or differ in a literal that may
    not vary)."""
    a, b = _group_nums(info, j, p), _group_nums(info, j + p, p)
    deltas = []
    varies = False
    for x, y in zip(a, b):
        if x.text == y.text:
            deltas.append(0)
            continue
        if x.kind not in ("int", "ull") or x.kind != y.kind:
            return 0
        deltas.append(y.value - x.value)
        varies = True
    if not varies:
        return 0
    for k in range(2, r):
        c = _group_nums(info, j + k * p, p)
        for x, z, d in zip(a, c, deltas):
            if d == 0:
                if z.text != x.text:
                    return k
            elif z.kind != x.kind or z.value != x.value + k * d or (x.kind == "int" and z.value > _INT_MAX):
                return k
    return r


def _progression(t: _Tok, d: int, i: str) -> str:
    sign, m = ("+", d) if d > 0 else ("-", -d)
    if t.kind == "int":
        return f"({t.text} {sign} {i} * {m})"
    return f"({t.text} {sign} (u64){i} * {m}ULL)"


def _loop(group: list[_Stmt], info: list[_Stmt], j: int, p: int, r: int, fresh: Callable[[], str]) -> list[str]:
    first = _group_nums(info, j, p)
    second = _group_nums(info, j + p, p)
    deltas = {id(x): y.value - x.value for x, y in zip(first, second) if x.text != y.text}
    i = fresh()
    toks: list[_Tok] = []
    prog: dict[int, tuple[int, int]] = {}  # token index -> (first value, delta)
    for s in group:
        if toks:
            toks.append(_Tok("ws", "\n"))
        for t in s.toks:
            d = deltas.get(id(t))
            if d is not None:
                prog[len(toks)] = (t.value, d)
                toks.append(_Tok("prog", _progression(t, d, i)))
            else:
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
