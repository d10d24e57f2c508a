"""The front-end's builder is composed of parts with one job each, not stacked by
inheritance, and no import cycle runs among its modules, not even through an import
inside a function (``test_import_layers`` counts only module-level imports as cycles)."""

from __future__ import annotations

import ast

from static.test_import_layers import REPO, _with_parents, import_graph, strongly_connected

FRONTEND = "innet.switch.frontend"
PARTS = {"context": "BuildContext", "expressions": "Exprs", "calls": "Calls", "annotations": "Annotator", "statements": "Stmts",
         "keysets": "Keysets", "tables": "Tables", "blocks": "Blocks", "program": "ProgramBuilder"}
"""Module of each builder part -> its class."""


def cycles_among(modules: set[str]) -> list[list[str]]:
    """Import cycles among ``modules`` (imports inside functions count; a parent package does not)."""
    graph = import_graph()
    inside = {n: {m for m in graph.get(n, set()) if m in modules} for n in modules}
    ancestors = {n: set(_with_parents(n)) for n in inside}
    return strongly_connected({n: deps - ancestors[n] for n, deps in inside.items()})


def assert_composed(folder: str, parts: dict[str, str]) -> None:
    """Each class of ``parts`` (module -> class, under ``folder``) has no base class."""
    for module, cls in parts.items():
        tree = ast.parse((REPO / folder / f"{module}.py").read_text())
        found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
        assert found, f"{folder}/{module}.py has no class {cls}"
        assert not found[0].bases, f"{cls} inherits {[ast.unparse(b) for b in found[0].bases]}"


def test_no_import_cycle_in_the_frontend_even_inside_functions() -> None:
    cycles = cycles_among({n for n in import_graph() if n.startswith(FRONTEND)})
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_builder_parts_are_composed_not_inherited() -> None:
    """Each part is a class of its own (no base class): it is handed the parts it uses."""
    assert_composed("switch/frontend", PARTS)
