"""P4Runtime status codes and error details, as both ends of the wire see them.

A ``P4RuntimeError`` carries a gRPC status code and a message naming the object, the
constraint and the value. A failed batch ``Write`` travels as gRPC ``UNKNOWN`` with a
``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer holding one
``p4.v1.Error`` per update, in order (P4Runtime spec, "Error reporting"); the server
builds it (``innet.switch.p4runtime.errors``), clients read it back with
:func:`status_details` and :func:`decode_write_errors`.
"""

from __future__ import annotations

from typing import Iterable

import grpc
from finsy.proto import p4r, rpc_status

STATUS_DETAILS_KEY = "grpc-status-details-bin"
"""Trailer that carries a serialized ``google.rpc.Status``."""


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


def rpc_code_of(code: grpc.StatusCode) -> int:
    """The google.rpc.Code integer of a gRPC status code."""
    value = code.value[0]
    assert isinstance(value, int)
    return value


_STATUS_CODES = {rpc_code_of(c): c for c in grpc.StatusCode}


def status_code_of(number: int) -> grpc.StatusCode:
    """The gRPC status code of a google.rpc.Code integer (UNKNOWN for numbers gRPC lacks)."""
    return _STATUS_CODES.get(number, grpc.StatusCode.UNKNOWN)


def status_details(trailing_metadata: Iterable[tuple[str, str | bytes]] | None) -> rpc_status.Status | None:
    """The google.rpc.Status carried in ``grpc-status-details-bin`` of a call's trailing
    metadata (``grpc.RpcError.trailing_metadata()``), None when there is none."""
    for key, value in trailing_metadata or ():
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            return rpc_status.Status.FromString(value)
    return None


def decode_write_errors(status: rpc_status.Status) -> list[p4r.Error]:
    """The ``p4.v1.Error`` list packed in a google.rpc.Status, one per update in order."""
    errors = []
    for detail in status.details:
        error = p4r.Error()
        if not detail.Unpack(error):
            raise ValueError(f"status detail of type {detail.TypeName()!r} is not p4.v1.Error")
        errors.append(error)
    return errors
