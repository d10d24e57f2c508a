"""Runs p4c's own error corpus (``testdata/p4_16_errors``: programs p4c's front-end rejects;
``testdata/p4_16_bmv_errors``: programs its BMv2 back end rejects) through ``innet-p4c``'s
compile and sorts every program into one outcome.

Why: p4c is the reference for what a P4_16 program may say.  A program p4c refuses that
innet accepts would load into innet-switch and then fail on BMv2 (or run something its
author did not mean); a refusal without a location leaves the user searching; a Python
traceback is a bug.  The programs stay in p4c's tree (a fetched copy); innet keeps none.

Outcomes (``Outcome``): ``located`` (one ``file:line:col: error:`` about the program),
``unlocated`` (refused, but the message points at no source position), ``warned`` (accepted
with a warning that BMv2 rejects it: a documented extension, see docs/p4c-compat.md),
``accepted`` (compiled without a word) and ``traceback`` (an exception that is not the
front-end's own error type escaped: a bug in innet).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

CORPORA = ("p4_16_errors", "p4_16_bmv_errors")
"""The corpus directories of a p4c checkout's ``testdata``, front-end errors first."""
ENV_VAR = "INNET_P4C_ERRORS"
"""Names a p4c checkout (or its ``testdata``) holding the corpora; the test tier reads it."""
DEFAULT_DIR = Path("/opt/p4c-testdata")
"""Where the test tier looks when ``INNET_P4C_ERRORS`` is not set."""
FRONTEND_LOGGER = "innet.switch.frontend"
BMV2_WARNING = "BMv2 rejects"
"""The phrase of a front-end warning about a program innet runs but BMv2 refuses
(``innet.switch.frontend.tables.BMV2_REJECTS`` starts with it)."""
_LOCATED = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?:error|warning): ")


class _Records(logging.Handler):
    """Keeps the text of every warning the front-end logs while one program compiles."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


class ErrorsDirError(Exception):
    """The directory holds neither corpus (nor a ``testdata`` with them)."""


class Outcome(str, Enum):
    LOCATED = "rejected-located"
    UNLOCATED = "rejected-unlocated"
    WARNED = "accepted-with-warning"
    ACCEPTED = "accepted"
    TRACEBACK = "traceback"


@dataclass(frozen=True)
class ErrorResult:
    corpus: str
    """``p4_16_errors`` or ``p4_16_bmv_errors``."""
    name: str
    """The program's file name inside its corpus."""
    outcome: Outcome
    message: str
    """The error (or warning) text; for a traceback, the exception's type and text."""

    @property
    def first_line(self) -> str:
        return self.message.splitlines()[0] if self.message else ""


@dataclass(frozen=True)
class ErrorsReport:
    directory: Path
    results: tuple[ErrorResult, ...]

    def counts(self, corpus: str | None = None) -> dict[Outcome, int]:
        """Outcome -> number of programs (of one corpus, or of all), every outcome present."""
        got = Counter(r.outcome for r in self.results if corpus is None or r.corpus == corpus)
        return {o: got.get(o, 0) for o in Outcome}

    def of(self, outcome: Outcome) -> list[ErrorResult]:
        return [r for r in self.results if r.outcome is outcome]


def corpus_dirs(directory: Path) -> dict[str, Path]:
    """Corpus name -> directory, for ``directory`` being a p4c checkout, its ``testdata``,
    or one corpus directory itself."""
    found: dict[str, Path] = {}
    for name in CORPORA:
        for cand in (directory / "testdata" / name, directory / name):
            if cand.is_dir() and any(cand.glob("*.p4")):
                found[name] = cand
                break
    if not found and directory.name in CORPORA and any(directory.glob("*.p4")):
        found[directory.name] = directory
    if not found:
        raise ErrorsDirError(f"{directory} holds no p4c error corpus (no *.p4 in testdata/p4_16_errors or "
                             "testdata/p4_16_bmv_errors of it, nor in it)")
    return found


@contextlib.contextmanager
def _start_cache_off() -> Iterator[None]:
    from innet.switch.startcache import CACHE_ENV

    saved = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = "off"
    try:
        yield
    finally:
        if saved is None:
            del os.environ[CACHE_ENV]
        else:
            os.environ[CACHE_ENV] = saved


def classify(path: Path, corpus: str = "") -> ErrorResult:
    """Compile ``path`` as ``innet-p4c`` does (nothing written) and name the outcome."""
    from innet.switch.device_config import build
    from innet.switch.frontend.errors import FrontendError
    from innet.switch.p4info import P4InfoError

    corpus = corpus or path.parent.name
    log = logging.getLogger(FRONTEND_LOGGER)
    caught = _Records()
    log.addHandler(caught)
    try:
        with _start_cache_off():  # one build per corpus program: no cache entries for them
            build(path)
    except (FrontendError, P4InfoError) as exc:
        text = str(exc)
        first = text.splitlines()[0] if text else ""
        located = isinstance(exc, FrontendError) and _LOCATED.match(first) is not None
        return ErrorResult(corpus, path.name, Outcome.LOCATED if located else Outcome.UNLOCATED, text)
    except (Exception, RecursionError, MemoryError) as exc:  # a bug in innet: the outcome to report
        return ErrorResult(corpus, path.name, Outcome.TRACEBACK, f"{type(exc).__name__}: {exc}"[:2000])
    finally:
        log.removeHandler(caught)
    notes = [m for m in caught.messages if BMV2_WARNING in m]
    if notes:
        return ErrorResult(corpus, path.name, Outcome.WARNED, "\n".join(notes))
    return ErrorResult(corpus, path.name, Outcome.ACCEPTED, "")


def run_errors(directory: Path) -> ErrorsReport:
    """Classify every ``*.p4`` of each corpus found under ``directory`` (sorted by name)."""
    results = [classify(p, corpus) for corpus, d in corpus_dirs(directory).items() for p in sorted(d.glob("*.p4"))]
    return ErrorsReport(directory, tuple(results))
