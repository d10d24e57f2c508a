"""innet.host.agent.aggregator: the Aggregator against the fake switch (TEST DOUBLE), in threads."""

from __future__ import annotations

import heapq
import threading
from dataclasses import replace

import numpy as np
import pytest

from innet import wire
from innet.host.agent.aggregator import AggregationError, Aggregator, JobConfig, StaleEpochError, Timing
from innet.host.agent.transport import UdpTransport, UdpTransportConfig

from testkit.fake_innet_switch import FakeInnetSwitch, FakeUdpSwitch
from testkit.rank_sums import rank_vectors, run_ranks, wrapped_sum

K = 16


def _run_workers(fake: FakeUdpSwitch, job: int, n: int, window: int, vectors: list[list[np.ndarray]],
                 timing: Timing, ranks: list[int] | None = None, epoch: int = 1) -> tuple[list, list]:
    """Each rank runs its list of vectors in order; returns (results per rank, errors)."""
    ranks = list(range(n)) if ranks is None else ranks
    results: list = [None] * n
    errors: list = [None] * n
    aggs: list = [None] * n

    def worker(rank: int) -> None:
        transport = UdpTransport(UdpTransportConfig("127.0.0.1", fake.address[1], "127.0.0.1"))
        try:
            agg = Aggregator(JobConfig(job, rank, n, window, K, epoch=epoch), transport, timing)
            aggs[rank] = agg
            results[rank] = [agg.run(v) for v in vectors[rank]]
        except AggregationError as error:
            errors[rank] = error
        finally:
            transport.close()

    run_ranks(worker, ranks, timeout=60)
    return results, errors


@pytest.mark.parametrize("n", [1, 2, 4])
def test_exact_wrapping_sums_over_several_rounds(n: int) -> None:
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(5, n, slot_count=4)
    sizes = [1, 17, 100, 64, 3]  # partial chunks, more chunks than slots, slot reuse across calls
    vectors = rank_vectors(n, sizes, seed=n)
    with FakeUdpSwitch(fake_switch) as fake:
        results, errors = _run_workers(fake, 5, n, 4, vectors, Timing(chunk_deadline=10))
    assert errors == [None] * n
    for rank in range(n):
        for i in range(len(sizes)):
            assert np.array_equal(results[rank][i], wrapped_sum(vectors, i))
    counters = fake_switch.jobs[5].counters
    chunks = sum(-(-s // K) for s in sizes)
    assert counters["completions"] == chunks
    assert counters["contributions"] == n * chunks


def test_loss_duplication_reordering_recovered() -> None:
    n = 3
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(9, n, slot_count=8)
    vectors = rank_vectors(n, [2000, 500], seed=7)
    with FakeUdpSwitch(fake_switch, impair=(0.1, 0.1, 0.1, 3)) as fake:
        results, errors = _run_workers(fake, 9, n, 8, vectors, Timing(initial_rto=0.02, chunk_deadline=10))
    assert errors == [None] * n
    for rank in range(n):
        assert np.array_equal(results[rank][0], wrapped_sum(vectors, 0))
        assert np.array_equal(results[rank][1], wrapped_sum(vectors, 1))
    counters = fake_switch.jobs[9].counters
    assert counters["contributions"] == n * (-(-2000 // K) + -(-500 // K))  # never double-counted
    assert counters["duplicates"] > 0


def test_dead_worker_is_named_by_the_others() -> None:
    n = 4
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(3, n, slot_count=4)
    vectors = rank_vectors(n, [40], seed=1)
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
            agg = Aggregator(JobConfig(1, 0, 2, 4, K, epoch=1), transport,
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
                                 msg.flags ^ wire.Flag.VER, 1, 1, msg.epoch, np.full(msg.count, 666, np.int32))
            other = wire.Message(wire.MsgType.RESULT, msg.job + 1, 0, msg.slot, msg.chunk,
                                 msg.flags, 1, 1, msg.epoch, np.full(msg.count, 777, np.int32))
            earlier = wire.Message(wire.MsgType.RESULT, msg.job, 0, msg.slot, msg.chunk, msg.flags,
                                   1, 1, msg.epoch - 1, np.full(msg.count, 888, np.int32))
            good = wire.Message(wire.MsgType.RESULT, msg.job, 0, msg.slot, msg.chunk, msg.flags,
                                1, 1, msg.epoch, msg.values * 2)
            for m in (stale, other, earlier, good, good):
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
        agg = Aggregator(JobConfig(1, 0, 1, 2, K, epoch=2), loop, Timing(chunk_deadline=2))
        out = agg.run(np.arange(50, dtype=np.int32))
        assert list(out) == list(range(0, 100, 2))
        assert agg.stats.late >= 8 and agg.stats.foreign >= 4
        assert agg.position == 4
    finally:
        loop.close()


def test_job_config_validation() -> None:
    with pytest.raises(ValueError, match="job 1: rank 4 is outside 0..3"):
        JobConfig(1, 4, 4, epoch=1)
    with pytest.raises(ValueError, match="num_workers 33 is outside 1..32"):
        JobConfig(1, 0, 33, epoch=1)


# -- deterministic timing: a simulated network with a fake clock --------------------------

class SimNet:
    """TEST DOUBLE: a discrete-event network around ``FakeInnetSwitch`` with a fake clock.

    One worker under test (rank 0) sends through ``send``; ranks 1.. are scripted: each
    contributes a chunk ``peer_delay(chunk)`` seconds (None: never) after the worker under
    test first sent it, with the same values. Messages take ``delay(direction, msg)``
    seconds; ``drop(direction, msg, nth)`` (nth: how many times this (direction, chunk,
    message type) was seen, from 1) decides losses. ``wait``/``clock`` drive the Aggregator."""

    def __init__(self, n: int, window: int, delay=lambda d, m: 0.001, peer_delay=lambda c: 0.0,
                 drop=lambda d, m, nth: False) -> None:
        self.n, self.delay, self.peer_delay, self.drop = n, delay, peer_delay, drop
        self.now = 0.0
        self.switch = FakeInnetSwitch(K)
        self.switch.add_job(1, n, slot_count=window)
        self.events: list = []
        self.inbox: list[bytes] = []
        self.sent: list[tuple[float, wire.Message]] = []
        """What the worker under test sent, with the time."""
        self.received: list[tuple[float, wire.Message]] = []
        self.seen: dict = {}
        self.local_address = ("sim", 0)
        self._seq = 0

    def clock(self) -> float:
        return self.now

    def fileno(self) -> int:
        return -1

    def close(self) -> None:
        pass

    def _at(self, t: float, kind: str, msg: wire.Message) -> None:
        self._seq += 1
        heapq.heappush(self.events, (t, self._seq, kind, msg))

    def _lost(self, direction: str, msg: wire.Message) -> bool:
        key = (direction, msg.chunk, msg.msg_type)
        self.seen[key] = self.seen.get(key, 0) + 1
        return bool(self.drop(direction, msg, self.seen[key]))

    def send(self, message: bytes) -> None:
        msg = wire.unpack(message, K)
        if not msg.flags & wire.Flag.RETRANS:  # a first transmission: the peers follow
            late = self.peer_delay(msg.chunk)
            for rank in range(1, self.n):
                if late is not None:
                    self._at(self.now + late, "switch", replace(msg, worker=rank, flags=msg.flags & wire.Flag.VER))
        self.sent.append((self.now, msg))
        if not self._lost("up", msg):
            self._at(self.now + self.delay("up", msg), "switch", msg)

    def _switch(self, msg: wire.Message) -> None:
        reply = self.switch.handle(msg)
        if reply is None or (reply[0] == "unicast" and msg.worker != 0):
            return
        out = reply[1]
        if not self._lost("down", out):
            self._at(self.now + self.delay("down", out), "worker", out)

    def wait(self, timeout: float) -> bool:
        end = self.now + timeout
        while not self.inbox and self.events and self.events[0][0] <= end:
            t, _, kind, msg = heapq.heappop(self.events)
            self.now = max(self.now, t)
            if kind == "worker":
                self.received.append((self.now, msg))
                self.inbox.append(wire.pack(msg, K))
            else:
                self._switch(msg)
        if self.inbox:
            return True
        self.now = max(self.now, end)
        return False

    def receive(self) -> bytes | None:
        return self.inbox.pop(0) if self.inbox else None

    def forget(self) -> None:
        """Clear the logs and loss counts (chunk numbers start at 0 again in the next run)."""
        self.sent, self.received, self.seen = [], [], {}

    def sends_of(self, chunk: int) -> list[float]:
        return [t for t, m in self.sent if m.chunk == chunk]

    def result_time(self, chunk: int) -> float:
        return min(t for t, m in self.received if m.chunk == chunk and m.msg_type == wire.MsgType.RESULT)


def _sim_aggregator(net: SimNet, window: int, timing: Timing) -> Aggregator:
    return Aggregator(JobConfig(1, 0, net.n, window, K, epoch=1), net, timing, clock=net.clock, wait=net.wait)


def test_chunk_backoff_doubles_then_ends_with_the_chunk() -> None:
    # RTT 2 ms: after chunk 0, SRTT 2 ms, RTTVAR 1 ms, RTO = max(2 + 4, 10) ms = 10 ms.
    timing = Timing(initial_rto=0.05, min_rto=0.01, max_rto=1.0)
    net = SimNet(1, window=1, drop=lambda d, m, nth: d == "up" and m.chunk == 1 and nth <= 3)
    agg = _sim_aggregator(net, 1, timing)
    values = np.arange(4 * K, dtype=np.int32)
    assert np.array_equal(agg.run(values), values)
    # chunk 1: sent at 2 ms, lost three times; its timer doubles: 10, 20, 40 ms
    assert net.sends_of(1) == pytest.approx([0.002, 0.012, 0.032, 0.072])
    # chunk 2 (after chunk 1's RESULT, no sample: Karn) is sent once; its RESULT is a valid
    # sample and ends the shared back-off TCP keeps until then
    assert net.sends_of(2) == pytest.approx([0.074])
    assert agg.stats.retransmitted == 3 and agg.stats.backoffs == 3
    assert agg.rto.backoff == 0 and agg.rto.rto == pytest.approx(0.01)
    # next run: chunk 1 lost once more; its first timeout is the base RTO again
    net.forget()
    net.drop = lambda d, m, nth: d == "up" and m.chunk == 1 and nth == 1
    start = net.now
    assert np.array_equal(agg.run(values), values)
    assert np.diff(net.sends_of(1)) == pytest.approx([0.01])
    assert net.sends_of(1)[0] == pytest.approx(start + 0.002)


def test_other_chunks_reset_the_shared_backoff_while_one_chunk_backs_off() -> None:
    """A chunk lost again and again backs off alone; chunks in the other slots keep
    completing, each valid sample resets the shared back-off, new chunks use the base RTO."""
    timing = Timing(initial_rto=0.05, min_rto=0.01, max_rto=1.0, chunk_deadline=10.0)
    net = SimNet(1, window=4, drop=lambda d, m, nth: d == "down" and m.chunk == 0 and nth <= 5)
    agg = _sim_aggregator(net, 4, timing)
    values = np.arange(40 * K, dtype=np.int32)
    assert np.array_equal(agg.run(values), values)
    gaps = np.diff(net.sends_of(0))
    assert gaps == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8])  # chunk 0 alone doubles
    # meanwhile slots 1..3 went on (per-slot pipelines): chunk 39 was sent before chunk 0's RESULT
    assert net.sends_of(39)[0] < net.result_time(0)
    later = [c for c in range(5, 40) if c % 4 != 0]
    assert all(len(net.sends_of(c)) == 1 for c in later)  # no spurious retransmissions
    assert agg.rto.backoff == 0 and agg.rto.rto == pytest.approx(0.01)
    # chunk 4 (slot 0's next use) waited for chunk 0
    assert net.sends_of(4)[0] >= net.result_time(0)


def test_lossy_run_does_not_escalate_timeouts() -> None:
    rng = np.random.default_rng(5)
    timing = Timing(initial_rto=0.05, min_rto=0.01, max_rto=1.0)
    net = SimNet(2, window=8, peer_delay=lambda c: 0.0005, drop=lambda d, m, nth: rng.random() < 0.05)
    agg = _sim_aggregator(net, 8, timing)
    values = np.arange(2000 * K, dtype=np.int32) % 1000
    assert np.array_equal(agg.run(values), 2 * values)
    lossy = net.now
    assert agg.stats.retransmitted >= 150  # ~10% of the chunks lost one way or the other
    assert agg.rto.backoff == 0 and agg.rto.rto == pytest.approx(0.01)
    # 250 rounds of 2 ms, plus ~25 losses per slot at ~10 ms: well under 2 s (a back-off
    # that grows with every expiry and decays slowly keeps the RTO near max_rto instead)
    assert lossy < 1.5
    # afterwards the same job runs loss-free at full speed, without a retransmission
    net.drop = lambda d, m, nth: False
    net.forget()
    before = agg.stats.retransmitted
    assert np.array_equal(agg.run(values), 2 * values)
    assert agg.stats.retransmitted == before
    assert net.now - lossy == pytest.approx(250 * 0.002)  # 2000 chunks / 8 slots, one RTT each


def test_status_from_slow_workers_is_not_loss_evidence() -> None:
    """A slow peer delays the RESULT: the probe's STATUS shows our contribution arrived, so
    the shared back-off is undone; the chunk keeps probing with its own back-off."""
    timing = Timing(initial_rto=0.05, min_rto=0.01, max_rto=1.0)
    net = SimNet(2, window=1, peer_delay=lambda c: 0.3)
    agg = _sim_aggregator(net, 1, timing)
    values = np.arange(K, dtype=np.int32)
    assert np.array_equal(agg.run(values), 2 * values)
    assert net.sends_of(0) == pytest.approx([0.0, 0.05, 0.15])
    assert agg.stats.statuses == 2 and agg.stats.probes == 1
    assert agg.stats.backoffs == 1 and agg.rto.backoff == 0  # doubled at 50 ms, undone by the STATUS
    assert agg.rto.srtt is None  # the RESULT of a retransmitted chunk is no sample (Karn)
    assert net.result_time(0) == pytest.approx(0.301)  # the peer's contribution arrives at 300 ms


def test_missing_worker_named_at_the_deadline() -> None:
    timing = Timing(initial_rto=0.05, min_rto=0.01, max_rto=0.2, chunk_deadline=1.0)
    net = SimNet(3, window=2, peer_delay=lambda c: None)
    agg = _sim_aggregator(net, 2, timing)
    with pytest.raises(AggregationError, match=r"job 1, worker 0: chunk 0 \(slot 0, copy 0\) not complete "
                       r"after 1\.00 s \(6 retransmissions\): missing workers \[1, 2\] "
                       r"\(switch bitmap 0x1 of 3 workers\)") as info:
        agg.run(np.arange(2 * K, dtype=np.int32))
    assert info.value.missing == (1, 2)
    assert net.now == pytest.approx(1.0)  # raised at the deadline, not a timer later
    # probes back off 50, 100, 200 ms, then max_rto
    assert np.diff(net.sends_of(0)) == pytest.approx([0.05, 0.1, 0.2, 0.2, 0.2, 0.2])


def test_spurious_timeout_answered_by_our_original_gives_a_sample() -> None:
    """The RESULT echoes the packet that completed the copy: ours without RETRANS means the
    original arrived, so its long RTT is a valid sample despite the retransmission (the
    samples Karn's rule would otherwise censor are exactly the long ones)."""
    timing = Timing(initial_rto=0.05, min_rto=0.01, max_rto=1.0)
    slow_original = lambda d, m: 0.07 if d == "up" and not m.flags & wire.Flag.RETRANS else 0.001  # noqa: E731
    lost_retrans = lambda d, m, nth: d == "up" and bool(m.flags & wire.Flag.RETRANS)  # noqa: E731
    net = SimNet(1, window=1, delay=slow_original, drop=lost_retrans)
    agg = _sim_aggregator(net, 1, timing)
    agg.run(np.arange(K, dtype=np.int32))
    assert net.sends_of(0) == pytest.approx([0.0, 0.05])
    assert agg.stats.spurious == 1 and agg.rto.srtt == pytest.approx(0.071)
    # the retransmission arrives first (51 ms) and completes the copy: its RESULT echoes
    # RETRANS, ambiguous, no sample
    net = SimNet(1, window=1, delay=slow_original)
    agg = _sim_aggregator(net, 1, timing)
    agg.run(np.arange(K, dtype=np.int32))
    assert net.result_time(0) == pytest.approx(0.052)
    assert agg.stats.spurious == 0 and agg.rto.srtt is None


def test_max_outstanding_bounds_chunks_in_flight() -> None:
    net = SimNet(2, window=8, peer_delay=lambda c: 0.0)
    agg = _sim_aggregator(net, 8, Timing(max_outstanding=2))
    values = np.arange(30 * K, dtype=np.int32)
    assert np.array_equal(agg.run(values), 2 * values)
    firsts = [net.sends_of(c)[0] for c in range(30)]
    results = [net.result_time(c) for c in range(30)]
    for t in firsts:
        assert sum(f <= t < r for f, r in zip(firsts, results)) <= 2
    assert net.now == pytest.approx(15 * 0.002)  # two chunks per 2 ms round trip
    assert agg.stats.retransmitted == 0


def test_timing_validation() -> None:
    with pytest.raises(ValueError, match="timing: max_outstanding 0 must be >= 1"):
        Timing(max_outstanding=0)
    with pytest.raises(ValueError, match="timing: chunk_deadline 0 must be positive"):
        Timing(chunk_deadline=0)
    with pytest.raises(ValueError, match=r"RTO bounds: min_rto 0.5 must be within"):
        Timing(min_rto=0.5, max_rto=0.1, initial_rto=0.05)


# -- epochs: worker sets on one job ---------------------------------------------------------

def test_worker_sets_one_after_another_each_exact() -> None:
    """Each set starts at stream position 0 on copies the previous set left complete (the F1
    reproducer); attaching moves the job to a new epoch, so no set sees another's sums."""
    switch = FakeInnetSwitch(K)
    switch.add_job(3, num_workers=2, slot_count=2)
    timing = Timing(initial_rto=0.02, chunk_deadline=5)
    with FakeUdpSwitch(switch) as fake:
        epoch = 1
        for seed in range(3):
            vectors = rank_vectors(2, [5 * K], seed)
            results, errors = _run_workers(fake, 3, 2, 2, vectors, timing, epoch=epoch)
            assert errors == [None, None]
            for r in range(2):
                assert np.array_equal(results[r][0], wrapped_sum(vectors, 0))
            epoch = switch.attach(3)
    assert switch.jobs[3].counters["stale"] == 0


def test_stale_worker_set_fails_at_once_naming_both_epochs() -> None:
    switch = FakeInnetSwitch(K)
    switch.add_job(3, num_workers=2, slot_count=2, epoch=7)
    timing = Timing(initial_rto=0.02, chunk_deadline=5)
    with FakeUdpSwitch(switch) as fake:
        results, errors = _run_workers(fake, 3, 2, 2, rank_vectors(2, [K], 0), timing, ranks=[0], epoch=6)
    error = errors[0]
    assert isinstance(error, StaleEpochError) and (error.epoch, error.switch_epoch) == (6, 7)
    assert "switch's job is at epoch 7, this worker set attached at epoch 6" in str(error)
    assert results[0] is None


def test_worker_set_restarted_mid_job() -> None:
    """Set A stalls halfway (rank 1 never sends); a new set B attaches and runs exactly on the
    same slots; A's surviving agent is told it is stale instead of waiting for its deadline."""
    switch = FakeInnetSwitch(K)
    switch.add_job(5, num_workers=2, slot_count=2)
    timing = Timing(initial_rto=0.02, max_rto=0.05, chunk_deadline=10)
    with FakeUdpSwitch(switch) as fake:
        outcome: dict[str, object] = {}

        def set_a() -> None:
            outcome["a"] = _run_workers(fake, 5, 2, 2, rank_vectors(2, [4 * K], 1), timing, ranks=[0], epoch=1)

        thread = threading.Thread(target=set_a)
        thread.start()
        while switch.jobs[5].counters["contributions"] < 1:  # A's rank 0 has contributed
            threading.Event().wait(0.005)
        epoch = switch.attach(5)
        vectors = rank_vectors(2, [4 * K, 3 * K], 2)
        results, errors = _run_workers(fake, 5, 2, 2, vectors, timing, epoch=epoch)
        thread.join(timeout=20)
    assert errors == [None, None]
    for r in range(2):
        for i in range(2):
            assert np.array_equal(results[r][i], wrapped_sum(vectors, i))
    _, a_errors = outcome["a"]  # type: ignore[misc]
    assert isinstance(a_errors[0], StaleEpochError)
