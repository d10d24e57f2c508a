"""A search through typed code: does a statement or expression contain a node?

Why: several of p4c's rules are about what code contains (a table applied in an action
argument, a function call in a keyset, a direct meter read by an action), and the IR has
no visitor; one generic walk over the dataclass fields serves them all.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from . import ir


def contains(node: object, found: Callable[[object], bool]) -> bool:
    """Does ``node`` (statements, expressions, the bodies of the actions it calls) hold a
    node for which ``found`` is true?  Tables, blocks, instances and types are not entered."""
    if found(node):
        return True
    if isinstance(node, ir.Action):
        return contains(node.body, found)
    if isinstance(node, (ir.Table, ir.Control, ir.Parser, ir.Instance, ir.Type)):
        return False
    if isinstance(node, (list, tuple)):
        return any(contains(x, found) for x in node)
    if dataclasses.is_dataclass(node):
        return any(contains(getattr(node, f.name), found) for f in dataclasses.fields(node))
    return False
