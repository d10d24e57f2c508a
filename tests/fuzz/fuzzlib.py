"""Shared pieces of the fuzz tests: example counts, hypothesis settings, a hang watchdog,
reproducer files and the list of known bugs being fixed elsewhere.

Why one module: every fuzz test must scale the same way with ``INNET_FUZZ_N``, be
deterministic the same way (hypothesis ``derandomize``, or ``INNET_FUZZ_SEED`` for a
different but fixed stream), and leave a reproducer in the same place when it fails.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from hypothesis import HealthCheck, seed, settings

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("INNET_FUZZ_ARTIFACTS", REPO / "results" / "fuzz"))
"""Where failing inputs are written (``results/`` is git-ignored)."""

F = TypeVar("F", bound=Callable[..., Any])


def fuzz_n() -> int | None:
    """``INNET_FUZZ_N`` (examples per fuzz test in long mode), or None in the default suite."""
    raw = os.environ.get("INNET_FUZZ_N")
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"INNET_FUZZ_N must be a positive integer, got {raw!r}") from None
    if n <= 0:
        raise ValueError(f"INNET_FUZZ_N must be a positive integer, got {raw!r}")
    return n


def examples(default: int) -> int:
    """Examples for one fuzz test: ``default`` (sized to stay well under 20 s here) or
    ``INNET_FUZZ_N`` when set."""
    return fuzz_n() or default


def fuzz_settings(default: int) -> Callable[[F], F]:
    """hypothesis settings (and seed) of every fuzz test.

    Deterministic by default (``derandomize``: the same examples on every run and
    machine); ``INNET_FUZZ_SEED=<int>`` switches to a fixed but different stream, for
    long runs that should not repeat the default examples. No example database: a
    failure is reproduced from the printed blob / saved reproducer, not from local state.
    """
    raw_seed = os.environ.get("INNET_FUZZ_SEED")
    s = settings(
        max_examples=examples(default),
        derandomize=raw_seed is None,
        database=None,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.large_base_example, HealthCheck.filter_too_much],
    )

    def wrap(fn: F) -> F:
        out = s(fn)
        if raw_seed is not None:
            out = seed(int(raw_seed))(out)
        return out  # type: ignore[no-any-return]

    return wrap


# ---------------------------------------------------------------------- hangs

class Hang(Exception):
    """An operation ran past its watchdog deadline (a hang, or something close to one)."""


@contextlib.contextmanager
def watchdog(seconds: float, what: str) -> Iterator[None]:
    """Raise ``Hang`` inside the guarded block after ``seconds`` (SIGALRM, main thread).

    The fuzz tests run under pytest-timeout's thread method (see conftest), so SIGALRM is
    free; a previous handler/timer is restored anyway."""
    def fire(signum: int, frame: Any) -> None:
        raise Hang(f"{what}: still running after {seconds:g} s")

    old = signal.signal(signal.SIGALRM, fire)
    prev_delay, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if prev_delay:
            signal.setitimer(signal.ITIMER_REAL, max(prev_delay - (time.monotonic() - start), 0.001))


# ---------------------------------------------------------------------- reproducers

def save_reproducer(kind: str, name: str, content: str | bytes) -> Path:
    """Write a failing input under ``ARTIFACTS/<kind>/`` and return its path."""
    folder = ARTIFACTS / kind
    folder.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^\w.-]+", "_", name)[:120]
    path = folder / safe
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


# ---------------------------------------------------------------------- known bugs

@dataclass(frozen=True)
class KnownBug:
    """A bug found before and being fixed on another branch: a fuzz outcome matching it is
    reported as a warning instead of failing, so that the rest of the fuzzing still runs.
    Delete the entry once the fix is merged (the warning then becomes a failure)."""

    name: str
    exc_type: str
    """Exception class name (or gRPC code name for P4Runtime outcomes)."""
    pattern: str
    """Regex searched in the exception text."""

    def matches(self, exc_type: str, text: str) -> bool:
        return exc_type == self.exc_type and re.search(self.pattern, text, re.S) is not None


KNOWN_BUGS: tuple[KnownBug, ...] = ()
"""Bugs fixed elsewhere but not yet merged: a fuzzer that hits one warns instead of failing.
Empty now: the empty-header, non-UTF-8 and atomicity bugs found while this suite was
written are fixed; a regression of any of them fails again."""


def known_bug(exc_type: str, text: str) -> KnownBug | None:
    """The known bug an outcome matches, if any (and warn about it)."""
    for bug in KNOWN_BUGS:
        if bug.matches(exc_type, text):
            warnings.warn(f"fuzz hit known bug (fix pending elsewhere): {bug.name}: "
                          f"{exc_type}: {text[:200]}", stacklevel=2)
            return bug
    return None


# ---------------------------------------------------------------------- counts

STATS: dict[str, int] = {}
"""Inputs run per kind in this pytest run (printed at the end of the run by the conftest)."""


def count(kind: str, n: int = 1) -> None:
    STATS[kind] = STATS.get(kind, 0) + n
