"""P4Runtime errors and their wire form.

A ``P4RuntimeError`` (:mod:`innet.switch.p4rt_codec.status`, shared with clients)
carries a gRPC status code and a message naming the object, the constraint and the value. Top-level RPC failures become the gRPC status directly; a
failed batch ``Write`` becomes gRPC ``UNKNOWN`` with a ``google.rpc.Status`` in the
``grpc-status-details-bin`` trailer holding one ``p4.v1.Error`` per update, in order (OK
updates have ``canonical_code`` 0), as the P4Runtime spec's error-reporting section and
BMv2's PI server do, within ``STATUS_DETAILS_BUDGET`` bytes so that default gRPC clients
can receive them (``write_error_status``).
"""

from __future__ import annotations

from typing import Sequence

import grpc
from finsy.proto import p4r, rpc_status

from innet.switch.p4rt_codec.status import P4RuntimeError, invalid, rpc_code_of

__all__ = [
    "P4RuntimeError", "invalid", "rpc_code_of", "NO_PIPELINE_MESSAGE", "not_found", "already_exists",
    "out_of_range", "permission_denied", "unimplemented", "no_pipeline", "write_error_status",
    "write_error_summary", "write_error_overflow", "STATUS_DETAILS_BUDGET", "MESSAGE_CHARS",
    "SUMMARY_CHARS", "SUMMARY_FAILURES", "MAX_DETAILED_UPDATES",
]

NO_PIPELINE_MESSAGE = "No forwarding pipeline config set for this device"
"""Exact message of the FAILED_PRECONDITION returned before any pipeline is set."""


def not_found(message: str) -> P4RuntimeError:
    """NOT_FOUND: the object does not exist."""
    return P4RuntimeError(grpc.StatusCode.NOT_FOUND, message)


def already_exists(message: str) -> P4RuntimeError:
    """ALREADY_EXISTS: the object exists already."""
    return P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS, message)


def out_of_range(message: str) -> P4RuntimeError:
    """OUT_OF_RANGE: an index is beyond the size of the object."""
    return P4RuntimeError(grpc.StatusCode.OUT_OF_RANGE, message)


def permission_denied(message: str) -> P4RuntimeError:
    """PERMISSION_DENIED: the caller may not do this (non-primary, const object)."""
    return P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED, message)


def unimplemented(message: str) -> P4RuntimeError:
    """UNIMPLEMENTED: valid P4Runtime that this target does not support."""
    return P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, message)


def no_pipeline() -> P4RuntimeError:
    """FAILED_PRECONDITION: nothing can be done before SetForwardingPipelineConfig."""
    return P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, NO_PIPELINE_MESSAGE)


STATUS_DETAILS_BUDGET = 6000
"""Bytes of ``grpc-status-details-bin`` a failed Write may carry. gRPC clients refuse
trailing metadata over 8 KiB (the default ``grpc.max_metadata_size``, a soft limit; 16 KiB
hard) with RESOURCE_EXHAUSTED and lose every per-update error; the rest of the 8 KiB is
left for ``grpc-message`` (at most ``SUMMARY_CHARS``) and gRPC's own trailers."""
MESSAGE_CHARS = 240
"""A per-update message is cut to this many characters when the details are shortened
(the first failures keep a message as long as the budget allows, later ones only a code)."""
SUMMARY_CHARS = 900
"""Upper bound of the status message (it travels as ``grpc-message``)."""
SUMMARY_FAILURES = 3
"""Failures named in the status message of a batch too large for per-update details."""


def _detail(error: p4r.Error) -> int:
    status = rpc_status.Status()
    status.details.add().Pack(error)
    return status.ByteSize()


MAX_DETAILED_UPDATES = (STATUS_DETAILS_BUDGET - SUMMARY_CHARS - 16) // _detail(p4r.Error(canonical_code=16))
"""The largest batch whose per-update errors (code only) still fit the budget; a client
that wants per-update errors for any outcome writes batches of at most this many."""


def _shorten(message: str, limit: int) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."


def write_error_status(results: Sequence[P4RuntimeError | None],
                       budget: int | None = None) -> rpc_status.Status:
    """The google.rpc.Status of a batch with one result per update (None = success),
    serialized within ``budget`` bytes.

    In order of preference: every message in full; every failure's code, with the
    messages (cut to ``MESSAGE_CHARS``) of as many of the first failures as fit; and when
    even codes alone do not fit, no per-update details but a message saying how many
    failed, the first few, and the batch size that would get per-update errors. A
    partial detail list is never sent: clients read the details by position."""
    budget = STATUS_DETAILS_BUDGET if budget is None else budget
    if len(results) * _detail(p4r.Error()) <= budget:
        status = _detailed(results, None)
        if status.ByteSize() <= budget:
            return status
        room = budget - _detailed(results, 0).ByteSize()
        keep = 0
        for result in results:
            if result is not None:
                cost = len(_shorten(result.message, MESSAGE_CHARS).encode()) + 6
                if cost > room:
                    break
                room -= cost
                keep += 1
        if room >= 0:
            status = _detailed(results, keep)
            if status.ByteSize() <= budget:
                return status
    return rpc_status.Status(code=rpc_code_of(grpc.StatusCode.UNKNOWN),
                             message=write_error_overflow(results))


def _detailed(results: Sequence[P4RuntimeError | None], messages: int | None) -> rpc_status.Status:
    """Every result as a p4.v1.Error; the first ``messages`` failures keep their message
    (cut to MESSAGE_CHARS), all of them in full when None."""
    status = rpc_status.Status(code=rpc_code_of(grpc.StatusCode.UNKNOWN),
                               message=write_error_summary(results))
    failed = 0
    for result in results:
        error = p4r.Error()
        if result is not None:
            error.canonical_code = rpc_code_of(result.code)
            if messages is None:
                error.message = result.message
            elif failed < messages:
                error.message = _shorten(result.message, MESSAGE_CHARS)
            failed += 1
        status.details.add().Pack(error)
    return status


def write_error_summary(results: Sequence[P4RuntimeError | None]) -> str:
    """One line naming how many updates failed and the first failure."""
    failed = [(i, r) for i, r in enumerate(results) if r is not None]
    if not failed:
        return "all updates succeeded"
    index, first = failed[0]
    return _shorten(f"{len(failed)} of {len(results)} updates failed; first: update {index}: "
                    f"{first.code.name}: {first.message}", SUMMARY_CHARS)


def write_error_overflow(results: Sequence[P4RuntimeError | None]) -> str:
    """The message of a failed batch too large for per-update details."""
    failed = [(i, r) for i, r in enumerate(results) if r is not None]
    head = (f"{len(failed)} of {len(results)} updates failed; a batch of {len(results)} updates is too "
            f"large for per-update errors within gRPC's metadata limit: split it into Writes of at most "
            f"{MAX_DETAILED_UPDATES} updates; first failures: ")
    room = max(80, (SUMMARY_CHARS - len(head)) // SUMMARY_FAILURES - 50)
    named = "; ".join(f"update {i}: {r.code.name}: {_shorten(r.message, room)}"
                      for i, r in failed[:SUMMARY_FAILURES])
    return _shorten(head + named, SUMMARY_CHARS)
