"""Errors raised by the executor: load-time (unsupported constructs) and control-plane misuse."""

from __future__ import annotations


class PipelineError(Exception):
    """Base class of executor errors."""


class UnsupportedError(PipelineError):
    """The compiler met a construct it cannot execute; the message starts with file:line:col."""

    def __init__(self, what: str, loc: object | None = None) -> None:
        where = format_loc(loc)
        super().__init__(f"{where}: unsupported: {what}" if where else f"unsupported: {what}")
        self.what = what
        self.loc = loc


class PacketError(PipelineError, ValueError):
    """A packet handed to the pipeline cannot enter it (an ingress port outside bit<9>)."""


class ControlPlaneError(PipelineError):
    """A control-plane request names an unknown object or carries an invalid value."""


class EntryExistsError(ControlPlaneError):
    """INSERT of an entry whose match key is already present."""


class EntryNotFoundError(ControlPlaneError):
    """MODIFY/DELETE of an entry that is not present."""


def format_loc(loc: object | None) -> str:
    """'file:line:col' for an IR Loc (or anything with file/line/col), '' for None."""
    if loc is None:
        return ""
    file = getattr(loc, "file", None)
    line = getattr(loc, "line", None)
    col = getattr(loc, "col", None)
    if file is None:
        return str(loc)
    return f"{file}:{line}:{col}"


class InUseError(ControlPlaneError):
    """DELETE of an action-profile member or group that entries or groups still reference."""
