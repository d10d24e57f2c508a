"""Int32 vectors per rank, their expected wrapped sums, and ranks run as threads: what the
aggregation tests of the python and the native agent both need."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

import numpy as np


def rank_vectors(n: int, sizes: list[int], seed: int) -> list[list[np.ndarray]]:
    """For each of ``n`` ranks, one random int32 vector of each size (the same for a seed)."""
    rng = np.random.default_rng(seed)
    return [[rng.integers(-(1 << 31), 1 << 31, s, dtype=np.int64).astype(np.int32) for s in sizes]
            for _ in range(n)]


def int32_sum(vectors: list[np.ndarray]) -> np.ndarray:
    """The vectors summed as the switch sums them: in int32, wrapping around."""
    total = sum(v.astype(np.int64) for v in vectors)
    return (np.asarray(total) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def wrapped_sum(vectors: list[list[np.ndarray]], i: int) -> np.ndarray:
    """The ranks' vector ``i`` summed as the switch sums it (``int32_sum``)."""
    return int32_sum([v[i] for v in vectors])


def run_ranks(work: Callable[[int], None], ranks: Iterable[int], timeout: float) -> None:
    """``work(rank)`` on a thread per rank, all at once; fails if one is still running after
    ``timeout`` seconds (a hung rank must not hang the suite)."""
    threads = [threading.Thread(target=work, args=(r,)) for r in ranks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in threads), "a rank did not finish in time"
