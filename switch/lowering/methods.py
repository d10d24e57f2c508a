"""Which method a method call is (P4_16 8.17 header methods, header-union validity, stack
shifts, packet_in/packet_out, extern objects, sub-block apply): decided once for both
executors' emitters, which write each case in their language."""

from __future__ import annotations

from typing import Any, Protocol

from ..frontend import ir
from .errors import Unsupported
from .places import Place, SlotLayout, members
from .types import is_scalar


class MethodEmitter(Protocol):
    """What method dispatch needs of an executor's emitter."""

    unsupported: Unsupported

    def place(self, e: ir.Expr) -> Place: ...

    def instance_apply(self, inst: ir.Instance, e: ir.MethodCall) -> str | None:
        """A method of a control or parser instance (``apply``: run it)."""
        ...

    def extern_method(self, inst: ir.Instance, e: ir.MethodCall) -> str | None:
        """A method of an extern object (register, counter, meter, hash, ...)."""
        ...

    def packet_in_method(self, e: ir.MethodCall) -> str | None: ...

    def emit_varbit_header(self, p: Place, t: ir.HeaderT, at: Any) -> None:
        """``packet_out.emit`` of the header at ``p``, one of whose fields is a varbit."""
        ...

    def emit_header(self, p: Place, t: ir.HeaderT, at: Any) -> None:
        """``packet_out.emit`` of the header at ``p``, a whole number of bytes wide."""
        ...

    def set_valid(self, dst: Place) -> None: ...

    def set_invalid(self, slot: str) -> None:
        """Mark the header whose validity is at slot index ``slot`` invalid."""
        ...

    def number(self, value: int) -> str:
        """The text of a compile-time number (a header's size)."""
        ...

    def any_valid(self, slots: list[str]) -> str:
        """Whether any of the headers with validity at these slot indexes is valid."""
        ...

    def stack_shift(self, p: Place, st: ir.StackT, m: str, e: ir.MethodCall) -> None:
        """``push_front``/``pop_front`` (``m``) on the stack at ``p``."""
        ...


def method_call(e: ir.MethodCall, out: MethodEmitter, layout: SlotLayout) -> str | None:
    """Emit method call ``e`` through ``out``: its value's text, None for a void method."""
    tgt = e.target
    tt = tgt.type
    m = e.method
    if isinstance(tgt, ir.InstanceRef):
        inst = tgt.inst
        if inst.decl is not None:
            return out.instance_apply(inst, e)
        return out.extern_method(inst, e)
    if isinstance(tt, ir.ExternT) and tt.name == "packet_in":
        return out.packet_in_method(e)
    if isinstance(tt, ir.ExternT) and tt.name == "packet_out":
        if m != "emit":
            raise out.unsupported(f"packet_out.{m}", e)
        arg = e.args[0].expr
        assert arg is not None, "packet_out.emit without an argument"
        emit_value(out, out.place(arg), arg.type, arg, layout)
        return None
    if isinstance(tt, ir.HeaderT):
        p = out.place(tgt)
        if m == "isValid":
            return f"S[{p.at()}]"
        if m == "setValid":
            out.set_valid(p)
            for sb in p.union_siblings:
                out.set_invalid(str(sb))
            return None
        if m == "setInvalid":
            out.set_invalid(p.at())
            return None
        if m in ("minSizeInBits", "maxSizeInBits"):
            return out.number(tt.width)
        if m in ("minSizeInBytes", "maxSizeInBytes"):
            return out.number((tt.width + 7) // 8)
    if isinstance(tt, ir.HeaderUnionT) and m == "isValid":
        p = out.place(tgt)
        slots = []
        off = 0
        for f in tt.fields:
            slots.append(p.at(off))
            off += layout.nslots(f.type)
        return out.any_valid(slots)
    if isinstance(tt, ir.StackT) and m in ("push_front", "pop_front"):
        out.stack_shift(out.place(tgt), tt, m, e)
        return None
    raise out.unsupported(f"method {m} on {tt}", e)


def emit_value(out: MethodEmitter, p: Place, t: ir.Type, at: Any, layout: SlotLayout) -> None:
    """Emit ``packet_out.emit`` of the value of type ``t`` at ``p`` through ``out``: a
    header if valid, an aggregate's headers in order; ``at`` (the emitted expression)
    is where a refusal points."""
    if isinstance(t, ir.HeaderT) and any(isinstance(f.type, ir.VarBitT) for f in t.fields):
        out.emit_varbit_header(p, t, at)
        return
    if isinstance(t, ir.HeaderT):
        w = t.width
        if w % 8:
            raise out.unsupported(f"emit of header {t.name} of {w} bits (not a whole number of bytes)", at)
        out.emit_header(p, t, at)
        return
    if isinstance(t, (ir.StructT, ir.HeaderUnionT, ir.StackT)):
        for m in members(p, t, layout):
            if not is_scalar(m.type):
                emit_value(out, m, m.type, at, layout)
        return
    raise out.unsupported(f"emit of {t}", at)
