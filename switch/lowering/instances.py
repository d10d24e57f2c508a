"""What an extern object instance (register, counter, meter, action profile) is, read once
from its declaration for both executors; each builds its own state from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..frontend import ir
from .errors import Unsupported

SIZED = ("register", "counter", "meter")
"""Kinds whose first constructor argument is the number of cells."""
DIRECT = ("direct_counter", "direct_meter")
PROFILES = ("action_profile", "action_selector")


@dataclass(frozen=True)
class ExternInstance:
    """An extern instance: its ``kind`` (the extern's name), control-plane name, number of
    cells (0 for direct and profile kinds), a register's cell type and a counter's or
    meter's unit (the ``CounterType``/``MeterType`` member, ``packets`` when not given)."""

    kind: str
    name: str
    size: int = 0
    value: ir.BitT | None = None
    unit: str = "packets"


def extern_instance(inst: ir.Instance, unsupported: Unsupported) -> ExternInstance | None:
    """The description of ``inst``; None for an extern kind neither executor has."""
    t = inst.type
    kind = t.name if isinstance(t, ir.ExternT) else ""
    args = inst.ctor_args

    def const(i: int) -> int:
        a = args[i] if i < len(args) else None
        if not isinstance(a, ir.Const):
            raise unsupported(f"non-constant constructor argument of {inst.name}", inst)
        return int(a.value)

    def unit(i: int) -> str:
        a = args[i] if i < len(args) else None
        return a.member if isinstance(a, ir.EnumMember) else "packets"

    if kind == "register":
        assert isinstance(t, ir.ExternT)
        vt = t.type_args[0] if t.type_args else ir.BitT(32)
        if isinstance(vt, ir.BoolT):
            vt = ir.BitT(1)
        if not isinstance(vt, ir.BitT):
            raise unsupported(f"register {inst.cp_name} of {vt} (only bit<W>/int<W> values)", inst)
        return ExternInstance(kind, inst.cp_name, const(0), vt)
    if kind in SIZED:
        return ExternInstance(kind, inst.cp_name, const(0), unit=unit(1))
    if kind in DIRECT:
        return ExternInstance(kind, inst.cp_name, unit=unit(0))
    if kind in PROFILES:
        return ExternInstance(kind, inst.cp_name)
    return None


def known_instance(inst: ir.Instance, unsupported: Unsupported,
                   refusal: Callable[[str], str]) -> ExternInstance:
    """The description of ``inst``, or the executor's refusal of its extern kind:
    ``refusal(kind)`` words it (each executor names what it lacks in its own terms)."""
    x = extern_instance(inst, unsupported)
    if x is None:
        t = inst.type
        raise unsupported(refusal(str(t.name if isinstance(t, ir.ExternT) else t)), inst)
    return x
