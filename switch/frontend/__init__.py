"""innet.switch.frontend: the P4_16 (v1model) front-end of innet's embedded target.

Public API::

    compile_file(path, include_dirs=(), defines=None) -> ir.Program
    compile_source(text, filename="<string>", include_dirs=(), defines=None) -> ir.Program

Pipeline: ``preprocess`` (system cpp, positions mapped back through line markers) ->
``lexer`` + ``parse`` (lark LALR) -> ``program`` (name resolution, typing, constant
folding) -> ``ir``.  ``program.ProgramBuilder`` composes parts with one job each --
``expressions``, ``calls``, ``annotations``, ``statements``, ``keysets``, ``tables``,
``blocks`` -- that
share one ``context.BuildContext``.  Errors are
``P4Error`` (a ``FrontendError``) with ``.loc``; see ``errors``.

Not supported (located ``UnsupportedError``): ``value_set``, non-const table ``entries``,
generic parser/control/function declarations, abstract extern methods.  The first error
is raised (no error recovery).  A program without ``main`` compiles with
``Program.main`` None.
"""

from __future__ import annotations

from pathlib import Path

from . import ir
from .errors import FrontendError, P4Error, PreprocessError, UnsupportedError

__all__ = ["compile_file", "compile_source", "ir", "FrontendError", "P4Error",
           "PreprocessError", "UnsupportedError"]


def compile_file(path: str | Path, include_dirs: tuple[str | Path, ...] = (),
                 defines: dict[str, str | None] | None = None) -> ir.Program:
    """Preprocess, parse and type-check a P4_16 v1model program file."""
    from .parse import parse
    from .preprocess import preprocess_file
    from .program import build_program
    return build_program(parse(preprocess_file(path, tuple(include_dirs), defines)))


def compile_source(text: str, filename: str = "<string>",
                   include_dirs: tuple[str | Path, ...] = (),
                   defines: dict[str, str | None] | None = None) -> ir.Program:
    """Like ``compile_file`` for in-memory source; errors name ``filename``."""
    from .parse import parse
    from .preprocess import preprocess_source
    from .program import build_program
    return build_program(parse(preprocess_source(text, filename, tuple(include_dirs), defines)))
