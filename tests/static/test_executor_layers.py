"""The executors' shared lowering stands below both executors, and no import cycle runs
among the three packages, not even through an import inside a function (the checks of
``test_import_layers`` count only module-level imports as cycles)."""

from __future__ import annotations

from static.test_import_layers import _with_parents, chain_to, import_graph, strongly_connected

EXECUTORS = ("innet.switch.pipeline", "innet.switch.native")
LOWERING = "innet.switch.lowering"


def test_lowering_imports_neither_executor() -> None:
    """What both executors share is passed their parts (layout, error class, emitter),
    so it stands below both and can serve each without the other."""
    graph = import_graph()
    for name in sorted(n for n in graph if n == LOWERING or n.startswith(LOWERING + ".")):
        chain = chain_to(graph, name, EXECUTORS)
        assert chain is None, " -> ".join(chain or [])


def test_no_import_cycle_among_the_executors_even_inside_functions() -> None:
    """A function-level import is still an edge of the design (the C generator and its
    wide-value half once imported each other that way); among the executors and the
    lowering there is none."""
    graph = import_graph()
    parts = (LOWERING, *EXECUTORS)
    inside = {n: {m for m in deps if m.startswith(parts)} for n, deps in graph.items() if n.startswith(parts)}
    ancestors = {n: set(_with_parents(n)) for n in inside}
    cycles = strongly_connected({n: deps - ancestors[n] for n, deps in inside.items()})
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)
