"""HB-domain exchanges over loopback TCP: reduce-scatter and all-gather are exact, errors name the peer."""

from __future__ import annotations

import socket
import threading
from typing import Any, Callable

import numpy as np
import pytest

from innet.host.rail import hbdomain
from innet.host.rail.hbdomain import HbConfig, HbError, HbGroup
from innet.testbed.core.freeport import free_ports


def _ports(n: int) -> tuple[tuple[str, int], ...]:
    return tuple(("127.0.0.1", port) for port in free_ports(n))


def _run_all(n: int, body: Callable[[HbGroup], Any], deadline: float = 5.0) -> list[Any]:
    peers = _ports(n)
    results: list[Any] = [None] * n

    def member(rank: int) -> None:
        try:
            with HbGroup(HbConfig(rank, peers, names=tuple(f"d1g{i + 1}" for i in range(n)), domain="hb1",
                                  connect_timeout=5.0, deadline=deadline)) as group:
                results[rank] = body(group)
        except BaseException as error:  # reported to the test
            results[rank] = error

    threads = [threading.Thread(target=member, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    return results


def test_reduce_scatter_then_all_gather_is_the_wrapping_sum() -> None:
    n, size = 3, 1000
    bounds = [(0, 320), (320, 640), (640, 1000)]
    data = [np.random.default_rng(r).integers(-(1 << 31), 1 << 31, size, dtype=np.int64).astype(np.int32)
            for r in range(n)]
    expect = np.sum([d.astype(np.int64) for d in data], axis=0)
    expect = (((expect + (1 << 31)) % (1 << 32)) - (1 << 31)).astype(np.int32)

    def body(group: HbGroup) -> np.ndarray:
        part = group.reduce_scatter(data[group.config.rank], bounds)
        return group.all_gather(part, bounds)

    for got in _run_all(n, body):
        assert isinstance(got, np.ndarray) and np.array_equal(got, expect)


def test_a_silent_peer_is_named_at_the_deadline() -> None:
    """d1g2 stays connected but never takes part (it leaves only after d1g1 gave up: had it
    left at once, d1g1 could fail on its send instead, a race the test must not depend on)."""
    gave_up = threading.Event()

    def body(group: HbGroup) -> object:
        if group.config.rank == 1:
            gave_up.wait(10)
            return None
        try:
            return group.reduce_scatter(np.zeros(4, np.int32), [(0, 2), (2, 4)])
        finally:
            gave_up.set()

    got = _run_all(2, body, deadline=0.5)
    assert isinstance(got[0], HbError)
    assert re_match(r"HB domain hb1: d1g1 \(127.0.0.1:\d+\) got nothing from d1g2 \(127.0.0.1:\d+\) within "
                    r"0.5 s during reduce-scatter", str(got[0])), str(got[0])


def re_match(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, text) is not None


def test_unreachable_member_is_named() -> None:
    peers = _ports(2)
    with pytest.raises(HbError, match=r"HB domain hb: cannot reach gpu1 \(127.0.0.1:\d+\)"):
        HbGroup(HbConfig(0, peers, connect_timeout=0.3)).start()


def test_a_connection_to_itself_is_dropped_so_the_peer_can_listen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel may pick a not-yet-listening peer's port as the source port of a connect()
    to it (TCP simultaneous open with itself). Rank 0 forced into that must let go of the port."""
    peers = _ports(2)
    real = socket.create_connection
    calls: list[tuple[str, int]] = []
    released = threading.Event()

    def connect(address: tuple[str, int], timeout: float | None = None) -> socket.socket:
        calls.append(address)
        if len(calls) == 1:
            sock = socket.socket()
            sock.bind(address)
            sock.connect(address)  # Linux: a socket connected to its own address
            return sock
        released.set()
        return real(address, timeout=timeout)

    monkeypatch.setattr(hbdomain.socket, "create_connection", connect)
    results: list[Any] = [None, None]

    def member(rank: int) -> None:
        try:
            with HbGroup(HbConfig(rank, peers, connect_timeout=5.0, deadline=5.0)) as group:
                results[rank] = group.all_gather(np.array([rank + 1], dtype=np.int32), [(0, 1), (1, 2)])
        except BaseException as error:  # reported to the test
            results[rank] = error

    first = threading.Thread(target=member, args=(0,))
    first.start()
    released.wait(5)
    monkeypatch.setattr(hbdomain.socket, "create_connection", real)
    second = threading.Thread(target=member, args=(1,))
    second.start()
    first.join(20)
    second.join(20)
    assert calls[0] == peers[1]
    assert all(isinstance(got, np.ndarray) and got.tolist() == [1, 2] for got in results), results
