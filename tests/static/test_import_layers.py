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
from collections.abc import Iterator
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PARTS = ("wire", "switch", "controller", "host", "testbed", "p4")
FORBIDDEN_FOR_CONTROLLER = ("innet.switch.p4runtime", "innet.switch.pipeline", "innet.switch.frontend")
CODEC = "innet.switch.p4rt_codec"


@cache
def _tree(path: Path) -> ast.Module:
    """The parsed source, once per session: every test walks the same ~500 files and parsing
    them dominated the file's time. The trees are only read."""
    return ast.parse(path.read_text(), str(path))


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
    for node in ast.walk(_tree(path)):
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


# -- the layers of host/ and testbed/ ------------------------------------------------------
#
# Each group is a list of tiers, lowest first; a module may import its own tier and tiers
# below, never above, and two folders of one tier (the systems) never import each other.

HOST_TIERS: tuple[tuple[str, ...], ...] = (
    ("agent",), ("training", "pytorch"), ("luwu", "rail", "geo"))
TESTBED_TIERS: tuple[tuple[str, ...], ...] = (
    ("core",), ("backends",), ("ina", "luwu", "rail", "geo", "microbench"), ("cluster",), ("cli",))


def _folder(module: str, part: str) -> str | None:
    """The first folder below ``innet.<part>`` that ``module`` lies in (None: the part itself)."""
    prefix = f"innet.{part}."
    if not module.startswith(prefix):
        return None
    return module[len(prefix):].split(".")[0]


def _tier_violations(graph: dict[str, set[str]], part: str,
                     tiers: tuple[tuple[str, ...], ...]) -> list[str]:
    rank = {folder: i for i, tier in enumerate(tiers) for folder in tier}
    bad = []
    for module, deps in graph.items():
        mine = _folder(module, part)
        if mine is None:
            continue
        for dep in deps:
            theirs = _folder(dep, part)
            if theirs is None or theirs == mine:
                continue
            if mine not in rank or theirs not in rank:
                bad.append(f"{module} -> {dep}: folder not in the layer list")
            elif rank[theirs] > rank[mine] or (rank[theirs] == rank[mine]):
                bad.append(f"{module} -> {dep}")
    return sorted(bad)


def test_every_host_and_testbed_module_lies_in_a_layer_folder() -> None:
    graph = import_graph()
    loose = [m for m in graph for part, tiers in (("host", HOST_TIERS), ("testbed", TESTBED_TIERS))
             if _folder(m, part) is not None and _folder(m, part) not in {f for t in tiers for f in t}]
    assert not loose, f"modules outside the layer folders: {sorted(loose)}"


def test_host_layers() -> None:
    bad = _tier_violations(import_graph(), "host", HOST_TIERS)
    assert not bad, "host imports upward or across systems: " + "; ".join(bad)


def test_testbed_layers() -> None:
    bad = _tier_violations(import_graph(), "testbed", TESTBED_TIERS)
    assert not bad, "testbed imports upward or across systems: " + "; ".join(bad)


def test_host_imports_neither_controller_nor_testbed() -> None:
    graph = import_graph()
    bad = sorted(f"{m} -> {d}" for m, d_set in graph.items() if m.startswith("innet.host")
                 for d in d_set if d.startswith(("innet.controller", "innet.testbed")))
    assert not bad, "; ".join(bad)


def test_controller_imports_nothing_of_host() -> None:
    """The wire format both sides speak lives in ``innet.wire``, below both, so the
    controller needs no part of the host side."""
    graph = import_graph()
    bad = sorted(f"{m} -> {d}" for m, d_set in graph.items() if m.startswith("innet.controller")
                 for d in d_set if d.startswith("innet.host"))
    assert not bad, "; ".join(bad)


def test_wire_imports_nothing_else_of_innet() -> None:
    graph = import_graph()
    bad = sorted(f"{m} -> {d}" for m, d_set in graph.items() if m.startswith("innet.wire")
                 for d in d_set if d != "innet" and not d.startswith("innet.wire"))
    assert not bad, "; ".join(bad)


# -- cycles and private names ---------------------------------------------------------------

def _module_level_imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Like ``imports_of`` but only statements that run when the module is imported (module
    body, ``if``/``try`` blocks there, ``TYPE_CHECKING`` blocks too, since a cycle hidden
    behind it is still a cycle of the design); imports of a module's own ancestor packages
    are left out, as Python initialises a package before its modules anyway."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _module_level(_tree(path).body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mini = ast.Module(body=[node], type_ignores=[])
            for target in _targets(mini, package, known):
                found.update(m for m in _with_parents(target) if m in known)
    ancestors = set(_with_parents(name))
    return {m for m in found if m not in ancestors}


def _targets(tree: ast.AST, package: str, known: dict[str, Path]) -> list[str]:
    targets: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets.append(base)
            targets += [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
    return targets


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module (iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_strongly_connected_finds_a_cycle() -> None:
    """Guards the checker: a planted cycle is found, a chain is not."""
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_module_level_import_cycles() -> None:
    known = innet_modules()
    graph = {name: _module_level_imports(name, path, known) for name, path in known.items()}
    cycles = strongly_connected(graph)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_private_name_is_imported_across_modules() -> None:
    known = innet_modules()
    bad = []
    for name, path in known.items():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("innet"):
                bad += [f"{name}: from {node.module} import {alias.name}" for alias in node.names
                        if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert not bad, "; ".join(sorted(bad))


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run when a module is imported: its body and, recursively, the
    bodies of ``if`` and ``try`` statements there (``TYPE_CHECKING`` blocks included)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _module_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _module_level(node.body + [s for h in node.handlers for s in h.body]
                                     + node.orelse + node.finalbody)


def _defined_names(path: Path) -> set[str]:
    """Names a module binds when imported: its defs, classes, assignments and imports."""
    names: set[str] = set()
    for node in _module_level(_tree(path).body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def test_every_innet_import_names_something_that_exists() -> None:
    """A renamed class leaves stale ``from innet.x import Old`` lines behind, also inside
    test functions that only run on machines with Mininet or BMv2; this finds them all
    without importing anything."""
    known = innet_modules()
    defined: dict[str, set[str]] = {}
    files = list(known.values()) + sorted((REPO / "tests").rglob("*.py"))
    bad = []
    for path in files:
        for node in ast.walk(_tree(path)):
            if not (isinstance(node, ast.ImportFrom) and not node.level
                    and (node.module == "innet" or (node.module or "").startswith("innet."))):
                continue
            module = node.module or ""
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            if module not in known:
                bad.append(f"{where}: no module {module}")
                continue
            if module not in defined:  # (setdefault would build its default on every import)
                defined[module] = _defined_names(known[module])
            names = defined[module]
            bad += [f"{where}: {module} has no {alias.name}" for alias in node.names
                    if alias.name != "*" and alias.name not in names and f"{module}.{alias.name}" not in known]
    assert not bad, "\n".join(bad)
