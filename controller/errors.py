"""Controller exceptions: every ``grpc.RpcError`` becomes one of these, once, at the wire
boundary (:mod:`innet.controller.client`), raised ``from None``.

Messages name the object, the constraint and the value; unknown names carry near
matches (``Did you mean 'ipv4_lpm'?``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import grpc

from innet.names import close_matches


class ControllerError(Exception):
    """Base class of everything the controller raises on purpose."""


class SwitchUnreachableError(ControllerError):
    """No gRPC connection to the switch within the deadline."""


class RpcError(ControllerError):
    """A P4Runtime RPC failed with a gRPC status ``code``."""

    def __init__(self, message: str, code: grpc.StatusCode) -> None:
        super().__init__(message)
        self.code = code


class NotPrimaryError(RpcError):
    """The switch refused a write or pipeline push: this client is not the primary."""


class UnimplementedError(RpcError):
    """The switch answered UNIMPLEMENTED (e.g. RegisterEntry on BMv2)."""


class NoPipelineError(RpcError):
    """The switch has no forwarding pipeline yet (FAILED_PRECONDITION)."""


@dataclass(frozen=True)
class UpdateFailure:
    """One failed update of a batch Write."""

    index: int
    """Position of the update in the batch (0-based, over the whole batch)."""
    code: grpc.StatusCode
    """Canonical gRPC status of this update."""
    message: str
    """The switch's explanation."""
    entity: str
    """Short description of the entity the update wrote."""

    def __str__(self) -> str:
        return f"update {self.index} ({self.entity}): {self.code.name}: {self.message}"


class WriteError(RpcError):
    """A batch Write where some updates failed; ``failures`` lists them in order."""

    def __init__(self, failures: list[UpdateFailure], total: int, requests: int = 1) -> None:
        first = failures[0] if failures else None
        text = f"{len(failures)} of {total} updates failed"
        if first is not None:
            text += f"; first: {first}"
        if requests > 1:
            text += (f" (sent as {requests} Write requests, not atomically: "
                     "the other updates were applied)")
        super().__init__(text, grpc.StatusCode.UNKNOWN)
        self.failures = failures
        self.total = total
        self.requests = requests
        """Write requests the updates were sent in."""


class SchemaError(ControllerError):
    """A name or value does not fit the pipeline's P4Info."""


class UnknownNameError(SchemaError, KeyError):
    """No P4 object of a kind with the given name; ``suggestions`` holds near matches."""

    def __init__(self, kind: str, name: str, known: Iterable[str], scope: str = "the P4Info") -> None:
        names = sorted(set(known))
        self.kind, self.name = kind, name
        self.suggestions = close_matches(name, names)
        text = f"no {kind} named {name!r} in {scope}"
        if self.suggestions:
            text += ". Did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        elif names and len(names) <= 12:
            text += "; known: " + ", ".join(names)
        super().__init__(text)

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class ValueRangeError(SchemaError, ValueError):
    """A value does not fit the width or range the P4 object declares."""


class PipelineConfigError(ControllerError):
    """A pipeline could not be found, read or compiled (names the path and why)."""


class JobError(ControllerError):
    """A job specification or operation is inconsistent with the switch (says how)."""
