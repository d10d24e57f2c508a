"""Hoisting of register/counter index range checks out of straight-line runs of generated code.

Out-of-range register reads give 0 and writes are ignored (BMv2), so every access carries a
check: ``x = R_c[i] if i < N else 0``, ``if i < N: R_c[i] = v``. When the index is a local
that nothing writes after its initializer (see :func:`.ranges.written_locals`), the generator
marks the line with a trailing ``  #G <i> <N>`` comment. :func:`hoist` turns a run of
consecutive same-indentation simple lines holding several marked accesses with the same
``(i, N)`` into

    if i < N:
        <the run, those accesses without their checks>
    else:
        <the run unchanged>

so the check runs once per run instead of once per access (innet.p4 has runs of 64 to 448
lines indexed by one slot or parameter index).
"""

from __future__ import annotations

import re

MIN_RUN = 3  # marked accesses needed before a run is worth duplicating
_MARK = re.compile(r"^(?P<ind>\s*)(?P<body>.*)  #G (?P<i>\w+) (?P<n>\d+)$")
_CONTINUATION = ("elif ", "else:", "except", "finally:")


def _marked(line: str) -> re.Match[str] | None:
    """The marker match of ``line``; the substring test first, since the pattern's
    backtracking over a long unmarked line costs far more than the scan."""
    return _MARK.match(line) if "  #G " in line else None


def mark(line: str, index: str, size: int) -> str:
    """``line`` (an access checking ``index < size``) with the hoisting marker."""
    return f"{line}  #G {index} {size}"


def _fast(body: str, index: str, size: str) -> str:
    """The access without its range check."""
    check = f"if {index} < {size}: "
    if body.startswith(check):
        return body[len(check):]
    tail = f" if {index} < {size} else 0"
    if body.endswith(tail):
        return body[: -len(tail)]
    raise ValueError(f"guards: marked line without a recognised range check: {body!r}")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" "))]


def _simple(line: str, ind: str, assigns_index: re.Pattern[str]) -> bool:
    """A self-contained line at indentation ``ind`` that does not assign the index."""
    if _indent(line) != ind:
        return False
    body = line.strip()
    if not body or body.endswith(":") or body.startswith(_CONTINUATION):
        return False
    return not assigns_index.search(body)


def hoist(lines: list[str]) -> list[str]:
    """``lines`` with the checks of marked runs hoisted (see the module docstring); marks removed."""
    out: list[str] = []
    k = 0
    while k < len(lines):
        m = _marked(lines[k])
        if m is None:
            out.append(lines[k])
            k += 1
            continue
        ind, i, n = m["ind"], m["i"], m["n"]
        assigns = re.compile(rf"(^|[^\w.\[]){re.escape(i)}\s*(=[^=]|[-+*/%&|^<>]+=)")
        j, last, count = k, k, 0
        while j < len(lines) and _simple(lines[j], ind, assigns):
            mj = _marked(lines[j])
            if mj is not None and (mj["i"], mj["n"]) == (i, n):
                count += 1
                last = j
            j += 1
        run = lines[k:last + 1]
        if count < MIN_RUN:
            out.append(_strip(lines[k]))
            k += 1
            continue
        out.append(f"{ind}if {i} < {n}:")
        fast = []
        for line in run:
            mj = _marked(line)
            if mj is not None and (mj["i"], mj["n"]) == (i, n):
                fast.append(f"{ind}    {_fast(mj['body'], i, n)}")
            else:
                fast.append(f"    {line}")
        out.extend(hoist(fast))  # accesses checked against another index or size
        out.append(f"{ind}else:")
        out.extend(f"    {_strip(line)}" for line in run)
        k = last + 1
    return out


def _strip(line: str) -> str:
    m = _marked(line)
    return f"{m['ind']}{m['body']}" if m is not None else line
