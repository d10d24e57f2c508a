"""The refusal of a construct an executor does not run, in one form for both.

Each executor raises its own error class (the native one falls back to Python on its
``NativeUnsupported``), so the class is passed in; the message (the construct, located
at the node's file:line:col by the class) is built here for both.
"""

from __future__ import annotations

from typing import Any, Callable

ErrorClass = Callable[[str, Any], Exception]
"""An executor's error class: built from (what is unsupported, the IR location or None)."""


class Unsupported:
    """Builds the error refusing ``node``: ``raise self.unsupported("what", node)``."""

    def __init__(self, error: ErrorClass) -> None:
        self.error = error

    def __call__(self, what: str, node: Any) -> Exception:
        return self.error(what, getattr(node, "loc", None))
