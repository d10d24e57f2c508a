"""Front-end exceptions.

Why: every consumer (CLI, tests, the P4Runtime server loading a pipeline) needs one
exception family to catch, and users need errors that point at the offending source
text.  ``P4Error`` renders as ``file:line:col: error: <message>`` followed by the source
line and a caret line, like p4c and gcc.
"""

from __future__ import annotations

from .ir import Loc


class FrontendError(Exception):
    """Base class of all front-end failures (missing cpp, bad source, ...)."""


class P4Error(FrontendError):
    """A located error in P4 source.  ``loc`` is the original file position; ``notes``
    holds further errors collected after the first one."""

    def __init__(self, loc: Loc, message: str, source_line: str | None = None) -> None:
        self.loc = loc
        self.message = message
        self.source_line = source_line
        self.notes: list[P4Error] = []
        super().__init__(self.render())

    def render(self) -> str:
        text = f"{self.loc.file}:{self.loc.line}:{self.loc.col}: error: {self.message}"
        if self.source_line is not None:
            line = self.source_line.rstrip("\n").expandtabs(1)
            caret = " " * max(self.loc.col - 1, 0) + "^"
            text += f"\n{line}\n{caret}"
        for note in self.notes:
            text += "\n" + note.render()
        return text

    def add_note(self, other: "P4Error") -> None:  # type: ignore[override]
        """Attach a further collected error (shown after this one)."""
        self.notes.append(other)
        self.args = (self.render(),)

    def __str__(self) -> str:
        return self.render()


class PreprocessError(P4Error):
    """The C preprocessor failed; the message carries cpp's own diagnostics."""


class UnsupportedError(P4Error):
    """A valid P4_16 construct that innet's embedded target does not implement."""
