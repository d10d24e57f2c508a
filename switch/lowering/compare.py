"""Equality of two aggregate values (headers, structs, unions, stacks), walked once for both
executors: what differs is the text of a header's and a slot's comparison and of a
conjunction, which the emitter gives."""

from __future__ import annotations

from typing import Any, Protocol

from ..frontend import ir
from .errors import Unsupported
from .places import Place, SlotLayout
from .types import is_scalar


class EqualityEmitter(Protocol):
    """The comparison text of one executor."""

    unsupported: Unsupported

    def header_equal(self, a: Place, b: Place, t: ir.HeaderT) -> str:
        """Two headers are equal: both invalid, or both valid with equal fields."""
        ...

    def slot_equal(self, a: str, b: str, t: ir.Type) -> str:
        """The scalar values of type ``t`` at slot indexes ``a`` and ``b`` are equal."""
        ...

    def conjunction(self, parts: list[str]) -> str:
        """All of ``parts`` hold (parenthesized; true for none)."""
        ...


def aggregate_equal(a: Place, b: Place, t: ir.Type, node: Any, out: EqualityEmitter, layout: SlotLayout) -> str:
    """The expression comparing the values of type ``t`` at ``a`` and ``b``."""
    if isinstance(t, ir.HeaderT):
        return out.header_equal(a, b, t)
    if isinstance(t, (ir.StructT, ir.HeaderUnionT)):
        parts = []
        off = 0
        for f in t.fields:
            if is_scalar(f.type):
                parts.append(out.slot_equal(a.at(off), b.at(off), f.type))
            else:
                parts.append(aggregate_equal(a.sub(off, f.type), b.sub(off, f.type), f.type, node, out, layout))
            off += layout.nslots(f.type)
        return out.conjunction(parts)
    if isinstance(t, ir.StackT):
        esz = layout.nslots(t.elem)
        return out.conjunction([aggregate_equal(a.sub(1 + i * esz, t.elem), b.sub(1 + i * esz, t.elem), t.elem, node,
                                                out, layout) for i in range(t.size)])
    raise out.unsupported(f"comparison of {t} values", node)
