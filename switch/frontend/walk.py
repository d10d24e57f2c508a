"""Searches and comparisons of typed code: does it contain a node, is it the same code?

Why: several of p4c's rules are about what code contains (a table applied in an action
argument, a function call in a keyset, a direct meter read by an action) or whether two
pieces are the same (a default action's arguments and its actions-list binding), and the
IR has no visitor; one generic walk over the dataclass fields serves them all.
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


def same_code(a: object, b: object) -> bool:
    """Are expressions ``a`` and ``b`` the same code, wherever they are written?  Names
    (variables, parameters, instances, actions) compare by identity, locations not at all."""
    if isinstance(a, ir.Expr) and isinstance(b, ir.Expr) and dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(same_code(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a) if f.name != "loc")
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_code(x, y) for x, y in zip(a, b))
    if isinstance(a, ir.Arg) and isinstance(b, ir.Arg):
        return a.direction == b.direction and same_code(a.expr, b.expr) and a.param is b.param
    if isinstance(a, (ir.Type, str, int, bool, type(None))):
        return bool(a == b)
    return a is b
