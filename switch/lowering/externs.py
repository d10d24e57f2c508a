"""What a v1model extern function call does, decided once for both executors.

:func:`lower_extern_call` reads an ``ExternCall`` (its name, its arguments by name or by
position) into one typed operation; each executor's emitter writes the operation in its
own language and in its own evaluation order. An extern neither executor knows gives
None, so each refuses it with its own message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ..frontend import ir
from .args import call_arg, const_int
from .errors import Unsupported

CHECKSUMS = ("verify_checksum", "update_checksum", "verify_checksum_with_payload", "update_checksum_with_payload")
CLONES = ("clone", "clone3", "clone_preserving_field_list")
RECIRCULATIONS = ("resubmit", "resubmit_preserving_field_list", "recirculate", "recirculate_preserving_field_list")


@dataclass(frozen=True)
class FieldList:
    """The metadata a clone, resubmit or recirculate carries: the l-values of ``data``
    (their slots), the fields annotated ``@field_list(index)``, or none (both None)."""

    data: ir.Expr | None = None
    index: int | None = None


@dataclass(frozen=True)
class MarkToDrop:
    """``mark_to_drop(standard_metadata)``: egress_spec to the drop port, no multicast."""


@dataclass(frozen=True)
class Hash:
    """``hash(result, algo, base, data, max)``: result = base + h(data) % max (base if max is 0)."""

    result: ir.Expr
    algo: ir.Expr
    base: ir.Expr
    data: ir.Expr
    max: ir.Expr


@dataclass(frozen=True)
class Random:
    """``random(result, lo, hi)``."""

    result: ir.Expr
    lo: ir.Expr
    hi: ir.Expr


@dataclass(frozen=True)
class Checksum:
    """``verify_checksum``/``update_checksum`` (``payload``: the ``_with_payload`` forms)."""

    verify: bool
    payload: bool
    condition: ir.Expr
    data: ir.Expr
    checksum: ir.Expr
    algo: ir.Expr


@dataclass(frozen=True)
class Clone:
    """``clone``/``clone3``/``clone_preserving_field_list``."""

    session: ir.Expr
    fields: FieldList


@dataclass(frozen=True)
class Recirculate:
    """``resubmit``/``recirculate`` and their ``_preserving_field_list`` forms."""

    resubmit: bool
    fields: FieldList


@dataclass(frozen=True)
class SendDigest:
    """``digest(receiver, data)``."""

    receiver: ir.Expr
    data: ir.Expr


@dataclass(frozen=True)
class Truncate:
    """``truncate(length)``."""

    length: ir.Expr


@dataclass(frozen=True)
class LogMsg:
    """``log_msg(text[, values])``."""

    text: str
    values: ir.Expr | None


@dataclass(frozen=True)
class Check:
    """``assert``/``assume`` (``name``): a false check fails the packet."""

    name: str
    check: ir.Expr


@dataclass(frozen=True)
class Verify:
    """``verify(check, toSignal)`` in a parser: a false check ends it with ``error``."""

    check: ir.Expr
    error: ir.Expr


@dataclass(frozen=True)
class NoOp:
    """A call with no run-time effect (``static_assert``, checked by the front-end)."""


ExternOp = Union[MarkToDrop, Hash, Random, Checksum, Clone, Recirculate, SendDigest, Truncate, LogMsg, Check,
                 Verify, NoOp]


def lower_extern_call(e: ir.ExternCall, unsupported: Unsupported) -> ExternOp | None:
    """The operation of extern call ``e``; None for an extern this lowering does not know."""
    n = e.name
    if n == "mark_to_drop":
        return MarkToDrop()
    if n == "hash":
        return Hash(call_arg(e, "result", 0), call_arg(e, "algo", 1), call_arg(e, "base", 2),
                    call_arg(e, "data", 3), call_arg(e, "max", 4))
    if n == "random":
        return Random(call_arg(e, "result", 0), call_arg(e, "lo", 1), call_arg(e, "hi", 2))
    if n in CHECKSUMS:
        return Checksum(n.startswith("verify"), n.endswith("_with_payload"), call_arg(e, "condition", 0),
                        call_arg(e, "data", 1), call_arg(e, "checksum", 2), call_arg(e, "algo", 3))
    if n in CLONES:
        session = call_arg(e, "session", 1)
        if n == "clone3":
            return Clone(session, FieldList(data=call_arg(e, "data", 2)))
        if n == "clone_preserving_field_list":
            return Clone(session, FieldList(index=const_int(call_arg(e, "index", 2), unsupported)))
        return Clone(session, FieldList())
    if n in RECIRCULATIONS:
        if n.endswith("_field_list"):
            fields = FieldList(index=const_int(call_arg(e, "index", 0), unsupported))
        elif e.args and e.args[0].expr is not None:
            fields = FieldList(data=e.args[0].expr)
        else:
            fields = FieldList()
        return Recirculate(n.startswith("resubmit"), fields)
    if n == "digest":
        return SendDigest(call_arg(e, "receiver", 0), call_arg(e, "data", 1))
    if n == "truncate":
        return Truncate(call_arg(e, "length", 0))
    if n == "log_msg":
        msg = e.args[0].expr
        values = e.args[1].expr if len(e.args) > 1 else None
        return LogMsg(msg.value if isinstance(msg, ir.StringLit) else "", values)
    if n in ("assert", "assume"):
        return Check(n, call_arg(e, "check", 0))
    if n == "verify":
        return Verify(call_arg(e, "check", 0), call_arg(e, "toSignal", 1))
    if n == "static_assert":
        return NoOp()
    return None
