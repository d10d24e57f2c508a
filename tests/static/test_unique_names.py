"""Every public top-level class name is defined once across ``innet.*``, so a name in
a traceback, a doc or a grep points at one thing (names say what they are).

Checked with ``ast`` over the sources. Private names (``_Stream``) are a module's own
business and not checked.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PARTS = ("wire", "switch", "controller", "host", "testbed", "p4")

ALLOWED = {
    # The front-end IR (switch/frontend/ir.py) names its nodes after the P4 constructs,
    # and the executor (switch/pipeline) its runtime objects likewise; both packages are
    # being reworked by the p4c-conformance work, so these are renamed there, not here.
    "Exit": {"innet.switch.frontend.ir", "innet.switch.pipeline.runtime"},
    "Member": {"innet.switch.frontend.ir", "innet.switch.pipeline.profiles"},
    "Table": {"innet.switch.frontend.ir", "innet.switch.pipeline.tables"},
    "UnsupportedError": {"innet.switch.frontend.errors", "innet.switch.pipeline.errors"},
    # ir.Switch / ir.Range are the P4 switch statement and range expression; the
    # controller's Switch (a session) and Range (a range match) are public API.
    "Switch": {"innet.switch.frontend.ir", "innet.controller.switch"},
    "Range": {"innet.switch.frontend.ir", "innet.controller.entities"},
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["innet", *parts])


def public_classes() -> dict[str, set[str]]:
    """Class name -> modules defining it at top level."""
    paths = [p for part in PARTS for p in (REPO / part).rglob("*.py")]
    paths += [p for p in REPO.glob("*.py") if p.name not in ("setup.py", "__init__.py")]
    out: dict[str, set[str]] = defaultdict(set)
    for path in paths:
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                out[node.name].add(_module(path))
    return out


def test_class_names_are_unique() -> None:
    classes = public_classes()
    assert len(classes) > 100
    dupes = {name: sorted(mods) for name, mods in classes.items()
             if len(mods) > 1 and mods != ALLOWED.get(name)}
    assert not dupes, "class names defined more than once: " + "; ".join(
        f"{name} in {', '.join(mods)}" for name, mods in sorted(dupes.items()))


def test_allowlist_is_current() -> None:
    """An entry that no longer matches (one side renamed) must be removed."""
    classes = public_classes()
    stale = {name for name, mods in ALLOWED.items() if classes.get(name) != mods}
    assert not stale, f"stale entries in ALLOWED: {sorted(stale)}"
