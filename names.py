"""Looking up P4 object names the way users type them, in one place for the front-end,
the executor, the STF runner and the controller.

- A name resolves exactly, or by a dotted suffix (``ipv4_lpm`` or ``MyIngress.ipv4_lpm``
  for ``MyIngress.ipv4_lpm``), as p4runtime-shell, finsy and BMv2's CLI allow:
  :func:`by_suffix` (the caller decides what zero or several hits mean).
- An unknown name gets the closest known names, compared in full and by their last
  component: :func:`close_matches`, and :func:`did_you_mean` for the message tail
  (docs/design.md, "Code conventions": ``... Did you mean 'ipv4_lpm'?``).
"""

from __future__ import annotations

import difflib
from typing import Iterable

CUTOFF = 0.6
"""difflib similarity below which a name is not offered as a suggestion."""


def short_name(name: str) -> str:
    """The last dotted component: ``ipv4_lpm`` of ``MyIngress.ipv4_lpm``."""
    return name.rsplit(".", 1)[-1]


def by_suffix(name: str, names: Iterable[str]) -> list[str]:
    """``[name]`` when it is one of ``names``, else every name ending in ``"." + name``,
    in the order given."""
    names = list(names)
    if name in names:
        return [name]
    return [n for n in names if n.endswith("." + name)]


def close_matches(name: str, known: Iterable[str], n: int = 2) -> list[str]:
    """Up to ``n`` names of ``known`` close to ``name``, best first, comparing full names
    and last components; returned as spelled in ``known``."""
    known = list(dict.fromkeys(known))
    by_short: dict[str, list[str]] = {}
    for k in known:
        by_short.setdefault(short_name(k), []).append(k)
    out = difflib.get_close_matches(name, known, n=n, cutoff=CUTOFF)
    for match in difflib.get_close_matches(short_name(name), list(by_short), n=n, cutoff=CUTOFF):
        out += [full for full in by_short[match] if full not in out]
    return out[:n]


def did_you_mean(name: str, known: Iterable[str], n: int = 1) -> str:
    """`` Did you mean 'x'?`` (or ``'x' or 'y'`` for ``n`` > 1) for the closest names, or
    an empty string when none is close: the tail of an "unknown name" message."""
    close = close_matches(name, known, n)
    return " Did you mean " + " or ".join(f"'{c}'" for c in close) + "?" if close else ""
