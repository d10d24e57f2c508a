"""The controller drives real BMv2 too, so it may not depend on innet's own switch:
no module of ``innet.controller`` imports, directly or through other modules, the
P4Runtime server (``innet.switch.p4runtime``), the executor (``innet.switch.pipeline``)
or the front-end (``innet.switch.frontend``). Both sides share only the codec
``innet.switch.p4rt_codec``, which imports nothing of innet but itself.

Checked statically with ``ast`` (every import statement, also those inside functions),
so nothing is imported to find out; importing ``a.b.c`` counts as importing ``a`` and
``a.b`` too, as Python runs their ``__init__``.
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PARTS = ("switch", "controller", "host", "testbed", "p4")
FORBIDDEN_FOR_CONTROLLER = ("innet.switch.p4runtime", "innet.switch.pipeline", "innet.switch.frontend")
CODEC = "innet.switch.p4rt_codec"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["innet", *parts])


def innet_modules() -> dict[str, Path]:
    """Every module of the installed package by dotted name."""
    out = {"innet": REPO / "__init__.py"}
    for part in PARTS:
        for path in (REPO / part).rglob("*.py"):
            out[_module_name(path)] = path
    for path in REPO.glob("*.py"):
        if path.name not in ("setup.py", "__init__.py"):
            out[_module_name(path)] = path
    return out


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """innet modules ``name`` imports (with their parent packages)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base]
            targets += [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
        for target in targets:
            found.update(m for m in _with_parents(target) if m in known)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    known = innet_modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def chain_to(graph: dict[str, set[str]], start: str, bad: tuple[str, ...]) -> list[str] | None:
    """The shortest import chain from ``start`` to a module under one of ``bad``."""
    seen = {start: [start]}
    todo = deque([start])
    while todo:
        current = todo.popleft()
        for nxt in sorted(graph.get(current, ())):
            if nxt in seen:
                continue
            seen[nxt] = seen[current] + [nxt]
            if any(nxt == b or nxt.startswith(b + ".") for b in bad):
                return seen[nxt]
            todo.append(nxt)
    return None


def test_the_graph_sees_imports() -> None:
    """Guards the checker itself: known edges of the server must be found."""
    graph = import_graph()
    assert "innet.switch.p4runtime.errors" in graph["innet.switch.p4runtime.tables"]
    assert "innet.switch.p4rt_codec.matches" in graph["innet.switch.p4runtime.tables"]
    assert chain_to(graph, "innet.switch.server", FORBIDDEN_FOR_CONTROLLER) is not None


def test_controller_does_not_import_the_switch() -> None:
    graph = import_graph()
    controller = sorted(m for m in graph if m == "innet.controller" or m.startswith("innet.controller."))
    assert len(controller) > 5
    chains = [c for c in (chain_to(graph, m, FORBIDDEN_FOR_CONTROLLER) for m in controller) if c]
    assert not chains, "controller imports the switch: " + "; ".join(" -> ".join(c) for c in chains)


def test_codec_is_a_leaf() -> None:
    graph = import_graph()
    codec = [m for m in graph if m == CODEC or m.startswith(CODEC + ".")]
    assert len(codec) >= 4
    outside = {(m, dep) for m in codec for dep in graph[m]
               if dep not in ("innet", "innet.switch") and not dep.startswith(CODEC)}
    assert not outside, f"the shared codec imports beyond itself: {sorted(outside)}"
