"""Compile P4 programs with p4c-bm2-ss ahead of their use, into the compile cache.

Why: the differential STF tier (``tests/integration/test_bmv2_stf.py``) compiles about 120
programs, one or two seconds of one core each, and runs each on ``simple_switch``, which
mostly waits (for its Thrift port, for the CLI, for the pcap files to drain). Run one after
the other, the compiles and the waits add up; compiled ahead on a background thread while
the current program runs, the next program is usually in the cache
(:func:`innet.testbed.backends.bmv2.compile_cache`) when its test asks for it.

Compiling ahead only fills the cache: whoever uses a program still calls ``compile_program``,
which copies the cached output or, where the compile ahead failed, runs p4c itself and
reports its error. So a failure here is never reported, and never hidden either.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Iterable

from innet.testbed.backends.bmv2 import compile_program


def default_workers() -> int:
    """One compile per core beyond the one the tests run on (at least one, at most two)."""
    return max(1, min(2, (os.cpu_count() or 2) - 1))


class CompileAhead:
    """Compiles ``sources`` in the given order on ``workers`` background threads."""

    def __init__(self, p4c: Path, sources: Iterable[Path], work: Path, workers: int | None = None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers or default_workers(), thread_name_prefix="p4c-ahead")
        self._futures: dict[Path, Future[Path]] = {}
        for i, source in enumerate(dict.fromkeys(sources)):
            self._futures[source] = self._pool.submit(compile_program, p4c, source, work / str(i))

    def wait(self, source: Path, timeout: float | None = None) -> bool:
        """Block until ``source``'s compile ahead has ended (True if it went into the cache;
        False if it failed, was not asked for, or is still running after ``timeout``)."""
        future = self._futures.get(source)
        if future is None:
            return False
        try:
            future.result(timeout)
        except Exception:  # the caller's own compile finds and reports it
            return False
        return True

    def close(self) -> None:
        """Drop the compiles not started yet and wait for the ones running (each is bounded by
        ``compile_program``'s timeout)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "CompileAhead":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
