"""The pipeline's code generator for one function body is composed of parts over one shared
``GenContext`` (expressions, externs, statements), not stacked by inheritance, and no import
cycle runs among their modules, not even through an import inside a function."""

from __future__ import annotations

from static.test_frontend_layers import assert_composed, cycles_among

PIPELINE = "innet.switch.pipeline"
PARTS = {"gencontext": "GenContext", "exprgen": "ExprGen", "externgen": "ExternGen", "stmtgen": "StmtGen"}
"""Module of each generator part -> its class."""


def test_no_import_cycle_among_the_generator_parts_even_inside_functions() -> None:
    cycles = cycles_among({f"{PIPELINE}.{m}" for m in PARTS})
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_generator_parts_are_composed_not_inherited() -> None:
    """Each part is a class of its own (no base class): it is handed the context and the parts it uses."""
    assert_composed("switch/pipeline", PARTS)
