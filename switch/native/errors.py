"""Errors of the native executor."""

from __future__ import annotations

from ..pipeline.errors import UnsupportedError


class NativeUnsupported(UnsupportedError):
    """A construct the native executor does not (yet) run; the message starts with
    file:line:col and names the construct. The selection logic falls back to python."""
