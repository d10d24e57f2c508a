"""``packet_in`` methods in a parser walked once for both executors: which header an
``extract`` fills, when a stack's next index moves on, what ``lookahead`` may read and
how far ``advance`` may go; the emitter writes the byte checks and copies."""

from __future__ import annotations

from typing import Any, Protocol

from ..frontend import ir
from .args import call_arg
from .errors import Unsupported
from .places import Place


class PacketInEmitter(Protocol):
    """What ``packet_in`` methods need of an executor's parser emitter."""

    in_parser: bool
    unsupported: Unsupported

    def place(self, e: ir.Expr) -> Place: ...

    def scratch(self, t: ir.HeaderT, purpose: str) -> int:
        """First slot of a fresh range for a header of ``t`` (``purpose`` names it)."""
        ...

    def extract_into(self, p: Place, ht: ir.HeaderT, advance: bool, node: object = None) -> None: ...

    def extract_varbit(self, p: Place, ht: ir.HeaderT, size: ir.Expr, node: Any) -> None: ...

    def bump_next_index(self, stack: Place) -> None:
        """Emit: the next index of the header stack at ``stack`` moves on by one."""
        ...

    def lookahead_value(self, t: ir.Type, e: ir.MethodCall) -> str:
        """The scalar of type ``t`` at the packet cursor, not consumed."""
        ...

    def advance_bytes(self, n: int) -> None:
        """Emit: move the cursor ``n`` bytes on (too few left is PacketTooShort)."""
        ...

    def advance_bits(self, amount: ir.Expr, e: ir.MethodCall) -> None:
        """Emit: move the cursor ``amount`` bits on, a run-time value checked to be whole bytes."""
        ...

    def packet_length(self) -> str: ...


def packet_in_method(gen: PacketInEmitter, e: ir.MethodCall) -> str | None:
    """The value of ``packet_in.<method>(...)`` (None for a statement)."""
    if not gen.in_parser:
        raise gen.unsupported(f"packet_in.{e.method} outside the parser", e)
    m = e.method
    if m == "extract":
        target = e.args[0].expr
        if target is None:  # extract<H>(_): the bytes are checked and skipped
            t = e.type_args[0] if e.type_args else None
            if not isinstance(t, ir.HeaderT) or len(e.args) != 1:
                raise gen.unsupported(f"extract into '_' of {t}", e)
            gen.extract_into(Place(gen.scratch(t, "discard"), t), t, advance=True, node=e)
            return None
        p = gen.place(target)
        if not isinstance(p.type, ir.HeaderT):
            raise gen.unsupported(f"extract into {p.type}", e)
        if len(e.args) == 2:
            size = e.args[1].expr
            assert size is not None
            gen.extract_varbit(p, p.type, size, e)
        else:
            gen.extract_into(p, p.type, advance=True, node=e)
        stack = target
        while isinstance(stack, ir.Member):  # u.next.member: a stack of header unions
            stack = stack.base
        if isinstance(stack, ir.StackProp) and stack.prop == "next":
            gen.bump_next_index(gen.place(stack.base))
        return None
    if m == "lookahead":
        t = e.type
        if isinstance(t, (ir.BitT, ir.BoolT)) or (isinstance(t, ir.EnumT) and t.underlying):
            return gen.lookahead_value(t, e)
        if isinstance(t, (ir.HeaderT, ir.StructT)):
            lookahead_place(gen, e)  # a statement: only the length check has an effect
            return None
        raise gen.unsupported(f"lookahead of {t} in an expression", e)
    if m == "advance":
        a = call_arg(e, "sizeInBits", 0)
        if isinstance(a, ir.Const):
            n = int(a.value)
            if n % 8:
                raise gen.unsupported(f"advance by {n} bits (not a whole number of bytes)", e)
            gen.advance_bytes(n // 8)
        else:
            gen.advance_bits(a, e)
        return None
    if m == "length":
        return gen.packet_length()
    raise gen.unsupported(f"packet_in.{m}", e)


def lookahead_place(gen: PacketInEmitter, e: ir.MethodCall) -> Place:
    """``lookahead<H>()`` of a header or a struct of fixed-width fields as a value: the
    bits are copied into a scratch slot range (a header there is valid), without
    consuming them; its fields can then be read (``lookahead<H>().f``)."""
    if not gen.in_parser:
        raise gen.unsupported("lookahead outside the parser", e)
    t = e.type
    if isinstance(t, ir.HeaderT):
        p = Place(gen.scratch(t, "lookahead"), t)
        gen.extract_into(p, t, advance=False, node=e)
        return p
    if isinstance(t, ir.StructT) and all(isinstance(f.type, (ir.BitT, ir.BoolT)) or
                                         (isinstance(f.type, ir.EnumT) and f.type.underlying)
                                         for f in t.fields):
        as_header = ir.HeaderT(t.name, t.fields)
        base = gen.scratch(as_header, "lookahead")
        gen.extract_into(Place(base, as_header), as_header, advance=False, node=e)
        return Place(base + 1, t)  # a struct of scalars: the header's slots without valid
    raise gen.unsupported(f"lookahead of {t}", e)
