"""innet.host.protocol: the Aggregator against the fake switch (TEST DOUBLE), in threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from innet.host import wire
from innet.host.fake_switch import FakeInnetSwitch, FakeUdpSwitch
from innet.host.protocol import AggregationError, Aggregator, JobConfig, Timing
from innet.host.transport import UdpTransport, UdpTransportConfig

K = 16


def _run_workers(fake: FakeUdpSwitch, job: int, n: int, window: int, vectors: list[list[np.ndarray]],
                 timing: Timing, ranks: list[int] | None = None) -> tuple[list, list]:
    """Each rank runs its list of vectors in order; returns (results per rank, errors)."""
    ranks = list(range(n)) if ranks is None else ranks
    results: list = [None] * n
    errors: list = [None] * n
    aggs: list = [None] * n

    def worker(rank: int) -> None:
        transport = UdpTransport(UdpTransportConfig("127.0.0.1", fake.address[1], "127.0.0.1"))
        try:
            agg = Aggregator(JobConfig(job, rank, n, window, K), transport, timing)
            aggs[rank] = agg
            results[rank] = [agg.run(v) for v in vectors[rank]]
        except AggregationError as error:
            errors[rank] = error
        finally:
            transport.close()

    threads = [threading.Thread(target=worker, args=(r,)) for r in ranks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    return results, errors


def _vectors(n: int, sizes: list[int], seed: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [[rng.integers(-(1 << 31), 1 << 31, s, dtype=np.int64).astype(np.int32) for s in sizes]
            for _ in range(n)]


def _expected(vectors: list[list[np.ndarray]], i: int) -> np.ndarray:
    total = sum(v[i].astype(np.int64) for v in vectors)
    return (np.asarray(total) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_exact_wrapping_sums_over_several_rounds(n: int) -> None:
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(5, n, slot_count=4)
    sizes = [1, 17, 100, 64, 3]  # partial chunks, more chunks than slots, slot reuse across calls
    vectors = _vectors(n, sizes, seed=n)
    with FakeUdpSwitch(fake_switch) as fake:
        results, errors = _run_workers(fake, 5, n, 4, vectors, Timing(chunk_deadline=10))
    assert errors == [None] * n
    for rank in range(n):
        for i in range(len(sizes)):
            assert np.array_equal(results[rank][i], _expected(vectors, i))
    counters = fake_switch.jobs[5].counters
    chunks = sum(-(-s // K) for s in sizes)
    assert counters["completions"] == chunks
    assert counters["contributions"] == n * chunks


def test_loss_duplication_reordering_recovered() -> None:
    n = 3
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(9, n, slot_count=8)
    vectors = _vectors(n, [2000, 500], seed=7)
    with FakeUdpSwitch(fake_switch, impair=(0.1, 0.1, 0.1, 3)) as fake:
        results, errors = _run_workers(fake, 9, n, 8, vectors, Timing(initial_rto=0.02, chunk_deadline=10))
    assert errors == [None] * n
    for rank in range(n):
        assert np.array_equal(results[rank][0], _expected(vectors, 0))
        assert np.array_equal(results[rank][1], _expected(vectors, 1))
    counters = fake_switch.jobs[9].counters
    assert counters["contributions"] == n * (-(-2000 // K) + -(-500 // K))  # never double-counted
    assert counters["duplicates"] > 0


def test_dead_worker_is_named_by_the_others() -> None:
    n = 4
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(3, n, slot_count=4)
    vectors = _vectors(n, [40], seed=1)
    timing = Timing(initial_rto=0.01, max_rto=0.1, chunk_deadline=0.8)
    with FakeUdpSwitch(fake_switch) as fake:
        _, errors = _run_workers(fake, 3, n, 4, vectors, timing, ranks=[0, 1, 3])
    for rank in (0, 1, 3):
        error = errors[rank]
        assert isinstance(error, AggregationError)
        assert error.job == 3 and error.missing == (2,)
        assert f"job 3, worker {rank}: chunk" in str(error)
        assert "missing workers [2] (switch bitmap 0xb of 4 workers)" in str(error)


def test_silent_switch_is_reported() -> None:
    fake_switch = FakeInnetSwitch(K)
    with FakeUdpSwitch(fake_switch) as fake:
        fake.silent = True
        transport = UdpTransport(UdpTransportConfig("127.0.0.1", fake.address[1], "127.0.0.1"))
        try:
            agg = Aggregator(JobConfig(1, 0, 2, 4, K), transport,
                             Timing(initial_rto=0.01, max_rto=0.05, chunk_deadline=0.3))
            with pytest.raises(AggregationError, match=r"job 1, worker 0: chunk 0 \(slot 0, copy 0\) "
                               r"not complete after 0\.\d+ s \(\d+ retransmissions\): no answer from switch"):
                agg.run(np.arange(10, dtype=np.int32))
            assert agg.stats.retransmitted >= 3
        finally:
            transport.close()


def test_late_and_foreign_messages_are_ignored() -> None:
    """A RESULT for a chunk that is not outstanding (stale copy) must not be taken."""

    class Loop:
        """A transport that answers each CONTRIB with a stale RESULT, then the right one."""

        def __init__(self) -> None:
            import socket

            self.a, self.b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.b.setblocking(False)
            self.local_address = ("local", 0)

        def fileno(self) -> int:
            return self.b.fileno()

        def send(self, message: bytes) -> None:
            msg = wire.unpack(message, K)
            stale = wire.Message(wire.MsgType.RESULT, msg.job, 0, msg.slot, msg.chunk,
                                 msg.flags ^ wire.Flag.VER, 1, 1, np.full(msg.count, 666, np.int32))
            other = wire.Message(wire.MsgType.RESULT, msg.job + 1, 0, msg.slot, msg.chunk,
                                 msg.flags, 1, 1, np.full(msg.count, 777, np.int32))
            good = wire.Message(wire.MsgType.RESULT, msg.job, 0, msg.slot, msg.chunk, msg.flags,
                                1, 1, msg.values * 2)
            for m in (stale, other, good, good):
                self.a.send(wire.pack(m, K))

        def receive(self) -> bytes | None:
            try:
                return self.b.recv(65535)
            except BlockingIOError:
                return None

        def close(self) -> None:
            self.a.close()
            self.b.close()

    loop = Loop()
    try:
        agg = Aggregator(JobConfig(1, 0, 1, 2, K), loop, Timing(chunk_deadline=2))
        out = agg.run(np.arange(50, dtype=np.int32))
        assert list(out) == list(range(0, 100, 2))
        assert agg.stats.late >= 4 and agg.stats.foreign >= 4
        assert agg.position == 4
    finally:
        loop.close()


def test_job_config_validation() -> None:
    with pytest.raises(ValueError, match="job 1: rank 4 is outside 0..3"):
        JobConfig(1, 4, 4)
    with pytest.raises(ValueError, match="num_workers 33 is outside 1..32"):
        JobConfig(1, 0, 33)
