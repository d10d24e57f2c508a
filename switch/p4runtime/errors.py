"""P4Runtime errors and their wire form.

A ``P4RuntimeError`` carries a gRPC status code and a message naming the object, the
constraint and the value. Top-level RPC failures become the gRPC status directly; a
failed batch ``Write`` becomes gRPC ``UNKNOWN`` with a ``google.rpc.Status`` in the
``grpc-status-details-bin`` trailer holding one ``p4.v1.Error`` per update, in order (OK
updates have ``canonical_code`` 0), as the P4Runtime spec's error-reporting section and
BMv2's PI server do.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import grpc
from finsy.proto import p4r, rpc_status

STATUS_DETAILS_KEY = "grpc-status-details-bin"
"""Trailer that carries a serialized ``google.rpc.Status``."""

NO_PIPELINE_MESSAGE = "No forwarding pipeline config set for this device"
"""Exact message of the FAILED_PRECONDITION returned before any pipeline is set."""


class P4RuntimeError(Exception):
    """A request (or one update of a batch) failed with ``code``."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"P4RuntimeError({self.code.name}, {self.message!r})"


def invalid(message: str) -> P4RuntimeError:
    """INVALID_ARGUMENT: the request is malformed."""
    return P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, message)


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


def rpc_code_of(code: grpc.StatusCode) -> int:
    """The google.rpc.Code integer of a gRPC status code."""
    value = code.value[0]
    assert isinstance(value, int)
    return value


_STATUS_CODES = {rpc_code_of(c): c for c in grpc.StatusCode}


def status_code_of(number: int) -> grpc.StatusCode:
    """The gRPC status code of a google.rpc.Code integer (UNKNOWN for numbers gRPC lacks)."""
    return _STATUS_CODES.get(number, grpc.StatusCode.UNKNOWN)


def write_error_status(results: Sequence[P4RuntimeError | None]) -> rpc_status.Status:
    """The google.rpc.Status of a batch with one result per update (None = success)."""
    status = rpc_status.Status(
        code=rpc_code_of(grpc.StatusCode.UNKNOWN),
        message=write_error_summary(results),
    )
    for result in results:
        error = p4r.Error()
        if result is not None:
            error.canonical_code = rpc_code_of(result.code)
            error.message = result.message
        status.details.add().Pack(error)
    return status


def write_error_summary(results: Sequence[P4RuntimeError | None]) -> str:
    """One line naming how many updates failed and the first failure."""
    failed = [(i, r) for i, r in enumerate(results) if r is not None]
    if not failed:
        return "all updates succeeded"
    index, first = failed[0]
    return (
        f"{len(failed)} of {len(results)} updates failed; first: update {index}: "
        f"{first.code.name}: {first.message}"
    )


def status_details(trailing_metadata: Iterable[tuple[str, str | bytes]] | None) -> rpc_status.Status | None:
    """The google.rpc.Status carried in ``grpc-status-details-bin`` of a call's trailing
    metadata (``grpc.RpcError.trailing_metadata()``), None when there is none."""
    for key, value in trailing_metadata or ():
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            return rpc_status.Status.FromString(value)
    return None


def decode_write_errors(status: rpc_status.Status) -> list[p4r.Error]:
    """The ``p4.v1.Error`` list packed in a google.rpc.Status (for clients and tests)."""
    errors = []
    for detail in status.details:
        error = p4r.Error()
        if not detail.Unpack(error):
            raise ValueError(f"status detail of type {detail.TypeName()!r} is not p4.v1.Error")
        errors.append(error)
    return errors
