"""A switch statement as the chain of branches both executors emit (if / else if / else)."""

from __future__ import annotations

from dataclasses import dataclass

from ..frontend import ir
from .errors import Unsupported


@dataclass(frozen=True)
class Branch:
    """One branch of a switch: taken when the value equals one of ``labels`` (an int is
    the index of an action in the switched table's action list, an expression a value),
    or always (``default``: the last branch). Cases without a body fall through into the
    next one's labels."""

    labels: tuple[int | ir.Expr, ...]
    default: bool
    body: ir.Block | None


def switch_branches(s: ir.Switch, unsupported: Unsupported) -> list[Branch]:
    """The branches of ``s`` in order (cases after ``default`` are never taken: dropped)."""
    e = s.expr
    table: ir.Table | None = None
    if isinstance(e, ir.Member) and e.name == "action_run" and isinstance(e.base, ir.TableApply):
        table = e.base.table
    out: list[Branch] = []
    pending: list[int | ir.Expr] = []
    for case in s.cases:
        default = False
        for lab in case.labels:
            if isinstance(lab, ir.DefaultKey):
                default = True
            elif isinstance(lab, ir.ActionLabel):
                assert table is not None, f"action label {lab.action.name} outside a switch on action_run"
                idx = [i for i, r in enumerate(table.actions) if r.action is lab.action]
                if not idx:
                    raise unsupported(f"action {lab.action.name} is not in table {table.name}", lab)
                pending.append(idx[0])
            else:
                pending.append(lab)
        if case.body is None and not default:
            continue
        out.append(Branch(tuple(pending), default, case.body))
        pending = []
        if default:
            break
    return out
