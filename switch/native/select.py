"""Choosing the executor of a pipeline: ``native`` (generated C) or ``python`` (the reference).

``load_pipeline(program, executor="auto")``: ``auto`` is native when a C compiler is
present and the native executor supports the program, else python with ONE line on stderr
saying why (the refusal's file:line:col and construct, or the missing compiler);
``native`` insists (raises); ``python`` never tries C.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ..frontend import ir
from ..pipeline.api import Pipeline

EXECUTORS = ("auto", "native", "python")
"""Values of ``--executor`` (``auto``: native when possible)."""


class ExecutorError(ValueError):
    """An unknown executor name."""


def check_executor(name: str) -> str:
    if name not in EXECUTORS:
        raise ExecutorError(f"unknown executor {name!r} (choose one of {', '.join(EXECUTORS)})")
    return name


def native_refusal(program: ir.Program) -> str | None:
    """Why the native executor cannot run ``program`` (None: it can), without compiling C."""
    from innet import native_build

    from . import cgen
    from .errors import NativeUnsupported

    if native_build.compiler_path() is None:
        return "no C compiler found (install gcc or set CC)"
    try:
        cgen.generate(program)
    except NativeUnsupported as e:
        return str(e)
    return None


def load_pipeline(program: ir.Program, executor: str = "auto", *, stderr: TextIO | None = None,
                  **kw: Any) -> Pipeline:
    """A ``Pipeline`` (python) or ``NativePipeline`` for ``program``; see the module doc."""
    check_executor(executor)
    if executor == "python":
        return Pipeline(program, **kw)
    from innet.native_build import NativeBuildError
    from .errors import NativeUnsupported
    from .pipeline import NativePipeline

    try:
        return NativePipeline(program, **kw)
    except (NativeUnsupported, NativeBuildError) as e:
        if executor == "native":
            raise
        print(f"innet: executor python (native executor not used: {e})", file=stderr or sys.stderr)
        return Pipeline(program, **kw)


def load_pipeline_file(path: str | Path, executor: str = "auto", include_dirs: Sequence[str | Path] = (),
                       **kw: Any) -> Pipeline:
    """Compile a P4 file with the front-end and load it with ``executor``."""
    from ..frontend import compile_file  # type: ignore[attr-defined]

    program = compile_file(str(path), include_dirs=tuple(str(d) for d in include_dirs))
    return load_pipeline(program, executor, **kw)
