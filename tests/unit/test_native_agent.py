"""innet.host.agent.native: the C datapath against the Python reference, byte for byte.

Quantization, dequantization and packing are compared value for value; the aggregation
loop is compared on the wire (a recording responder keeps every datagram both datapaths
send for the same inputs) and against the fake switch (TEST DOUBLE) with loss,
duplication, reordering, dead workers, a silent switch and stale epochs.
"""

from __future__ import annotations

import selectors
import socket
import threading
from typing import Any, Callable

import numpy as np
import pytest

from innet.wire import quantize as qz
from innet import wire
from innet.host.agent.native import datapath as dp
from innet.host.agent.native.aggregator import NativeAggregator
from innet.host.agent.aggregator import AggregationError, Aggregator, JobConfig, StaleEpochError, Timing
from innet.host.agent.transport import (FrameTunnelTransport, TunnelTransportConfig, UdpTransport,
                                  UdpTransportConfig)
from innet.native_build import NativeBuildError
from innet.wire.owners import OwnerRange
from testkit.fake_innet_switch import DataplaneUdpSwitch, FakeInnetSwitch, FakeUdpSwitch
from testkit.rank_sums import rank_vectors, run_ranks, wrapped_sum

K = 16
SLOW_RTO = Timing(initial_rto=1.0, min_rto=0.5, max_rto=1.0, chunk_deadline=10)
"""No timer fires in a run of a few milliseconds: the send order is the protocol's alone."""


@pytest.fixture(scope="module")
def native() -> dp.Codec:
    try:
        return dp.Codec(dp.load_native())
    except NativeBuildError as error:
        pytest.skip(f"native datapath needs a C compiler and cffi: {error}")


PYTHON = dp.Codec(None)


def _edge_floats(rng: np.random.Generator) -> np.ndarray:
    halves = (np.arange(-20, 20) + 0.5) / 256  # ties at frac_bits 8: half to even
    return np.concatenate([
        rng.normal(scale=3.0, size=5000), halves, [0.0, -0.0, 1e-40, -1e-40, 3.4e38, -3.4e38],
        rng.uniform(-1e6, 1e6, 500),
    ]).astype(np.float32)


@pytest.mark.parametrize("frac_bits,limit,bound", [(8, qz.INT32_MAX, 0.0), (16, qz.INT32_MAX // 4, 0.0),
                                                   (20, qz.INT32_MAX // 3, 7.5), (-3, 1000, 0.0)])
def test_quantize_equals_reference(native: dp.Codec, frac_bits: int, limit: int, bound: float) -> None:
    x = _edge_floats(np.random.default_rng(frac_bits + 100))
    a = PYTHON.quantize(x, frac_bits, limit, bound)
    b = native.quantize(x, frac_bits, limit, bound)
    assert a.saturated == b.saturated > 0 or bound == 0.0 and a.saturated == b.saturated
    assert np.array_equal(a.values, b.values)


@pytest.mark.parametrize("workers", [1, 3, 32])
def test_quantize_sum_and_grads_equal_reference(native: dp.Codec, workers: int) -> None:
    x = _edge_floats(np.random.default_rng(workers))[:5040]
    for bound in (1.0, 2.5, float(np.max(np.abs(x)))):
        (qa, fa), (qb, fb) = PYTHON.quantize_sum(x, bound, workers), native.quantize_sum(x, bound, workers)
        assert fa == fb and qa.saturated == qb.saturated and np.array_equal(qa.values, qb.values)
    fmt = qz.FixedPointFormat(12, 18, workers)
    ga, gb = PYTHON.grads(fmt, x), native.grads(fmt, x)
    assert ga.saturated == gb.saturated and np.array_equal(ga.values, gb.values)


@pytest.mark.parametrize("codec", ["python", "native"])
def test_quantize_into_a_used_buffer_equals_a_fresh_one(native: dp.Codec, codec: str) -> None:
    """The agent quantizes every operation into one kept buffer: what was there before must
    not show through, and a buffer of the wrong kind is refused."""
    c = PYTHON if codec == "python" else native
    x = _edge_floats(np.random.default_rng(11))
    out = np.full(x.size, -7, np.int32)
    fresh, f = c.quantize_sum(x, 2.5, 4)
    kept, g = c.quantize_sum(x, 2.5, 4, out=out)
    assert kept.values is out and f == g and kept.saturated == fresh.saturated > 0
    assert np.array_equal(out, fresh.values)
    fmt = qz.FixedPointFormat(12, 18, 4)
    out[:] = -7
    assert c.grads(fmt, x, out=out).values is out and np.array_equal(out, c.grads(fmt, x).values)
    for wrong in (np.empty(x.size, np.int64), np.empty(x.size - 1, np.int32), np.empty((x.size, 2), np.int32)[:, 0]):
        with pytest.raises(ValueError, match="out must be contiguous int32"):
            c.quantize(x, 8, qz.INT32_MAX, out=wrong)
        with pytest.raises(ValueError, match="allreduce input: out must be contiguous int32"):
            c.quantize_sum(x, 2.5, 4, out=wrong)


def test_quantize_rejects_non_finite_like_reference(native: dp.Codec) -> None:
    x = np.array([1.0, 2.0, np.nan, np.inf, 3.0], np.float32)
    for codec in (PYTHON, native):
        with pytest.raises(qz.QuantizeError, match=r"allreduce input: 2 non-finite values "
                                                    r"\(first at index 2: nan\)"):
            codec.quantize_sum(x, 4.0, 2)


def test_dequantize_equals_reference(native: dp.Codec) -> None:
    rng = np.random.default_rng(5)
    q = np.concatenate([rng.integers(-(1 << 31), 1 << 31, 4000, dtype=np.int64),
                        [-(1 << 31), (1 << 31) - 1, 0, 1, -1]]).astype(np.int32)
    for f in (-5, 0, 7, 16, 30, 60):
        a, b = PYTHON.dequantize(q, f), native.dequantize(q, f)
        assert a.dtype == b.dtype == np.float32
        assert a.tobytes() == b.tobytes()


def test_pack_equals_wire_pack(native: dp.Codec) -> None:
    assert native.lib is not None
    ffi, lib = native.lib.ffi, native.lib.lib
    rng = np.random.default_rng(9)
    for count in (0, 1, 5, K):
        values = rng.integers(-(1 << 31), 1 << 31, count, dtype=np.int64).astype(np.int32)
        msg = wire.Message(wire.MsgType.RESULT, 0xABCD, 31, 65535, 0xFFFFFFFF, 3, 32, 0x80000001,
                           0xDEADBEEF, values)
        buf = ffi.new("uint8_t[]", wire.message_len(K))
        length = lib.innet_pack(buf, msg.msg_type, msg.flags, msg.job, msg.worker, msg.slot, msg.chunk,
                                count, msg.num_workers, msg.bitmap, msg.epoch,
                                ffi.from_buffer("int32_t[]", values), K)
        assert bytes(ffi.buffer(buf, length)) == wire.pack(msg, K)


# -- the loop on the wire -----------------------------------------------------------------

SWITCH_EP = wire.Endpoint("02:00:00:00:00:fe", "10.0.0.254")
WORKER_EP = wire.Endpoint("02:00:00:00:00:01", "10.0.0.1", 40000)


class Recorder:
    """A one-worker switch that records every datagram and answers each CONTRIB with its
    RESULT (the sum of one); ``drop(msg)`` True swallows it. Frames in ``tunnel`` mode."""

    def __init__(self, tunnel: bool, drop: Callable[[wire.Message], bool] = lambda m: False) -> None:
        self.tunnel, self.drop = tunnel, drop
        self.received: list[bytes] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def _loop(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self.sock, selectors.EVENT_READ, "sock")
            sel.register(self._wake_r, selectors.EVENT_READ, "wake")
            while True:
                for key, _ in sel.select():
                    if key.data == "wake":
                        return
                    data, sender = self.sock.recvfrom(65535)
                    self.received.append(data)
                    self._answer(data, sender)

    def _answer(self, data: bytes, sender: tuple[str, int]) -> None:
        payload = data
        if self.tunnel:
            parsed = wire.parse_frame(data)
            assert parsed is not None
            payload = parsed.payload
        msg = wire.unpack(payload, K)
        if self.drop(msg):
            return
        reply = wire.pack(wire.Message(wire.MsgType.RESULT, msg.job, msg.worker, msg.slot, msg.chunk,
                                       msg.flags, 1, 1, msg.epoch, msg.values), K)
        self.sock.sendto(wire.frame(SWITCH_EP, WORKER_EP, reply) if self.tunnel else reply, sender)

    def close(self) -> None:
        self._wake_w.send(b"x")
        self._thread.join(timeout=5)
        for s in (self.sock, self._wake_r, self._wake_w):
            s.close()


def _transport(tunnel: bool, port: int) -> Any:
    if tunnel:
        return FrameTunnelTransport(TunnelTransportConfig(("127.0.0.1", port), WORKER_EP, SWITCH_EP))
    return UdpTransport(UdpTransportConfig("127.0.0.1", port, "127.0.0.1"))


def _record(make: Callable[..., Any], tunnel: bool, vectors: list[np.ndarray], timing: Timing,
            drop: Callable[[wire.Message], bool] = lambda m: False) -> tuple[list[bytes], list[np.ndarray], Any]:
    recorder = Recorder(tunnel, drop)
    transport = _transport(tunnel, recorder.port)
    try:
        agg = make(JobConfig(7, 0, 1, 4, K, epoch=3), transport, timing)
        results = [agg.run(v) for v in vectors]
    finally:
        transport.close()
        recorder.close()
    return recorder.received, results, agg


def _native_maker(native: dp.Codec) -> Callable[..., Any]:
    return lambda job, transport, timing: NativeAggregator(job, transport, timing, native.lib)


@pytest.mark.parametrize("tunnel", [False, True], ids=["udp", "tunnel"])
def test_same_wire_bytes_as_reference(native: dp.Codec, tunnel: bool) -> None:
    rng = np.random.default_rng(11)
    vectors = [rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int64).astype(np.int32)
               for n in (1, 17, 100, 0, 64, 3)]
    sent_py, out_py, agg_py = _record(Aggregator, tunnel, vectors, SLOW_RTO)
    sent_c, out_c, agg_c = _record(_native_maker(native), tunnel, vectors, SLOW_RTO)
    assert len(sent_py) == sum(-(-v.size // K) for v in vectors)
    assert sent_c == sent_py
    for v, a, b in zip(vectors, out_py, out_c):
        assert np.array_equal(a, v) and np.array_equal(b, v)
    assert agg_c.position == agg_py.position
    assert agg_c.stats.sent == agg_py.stats.sent and agg_c.stats.results == agg_py.stats.results


def test_same_retransmissions_as_reference(native: dp.Codec) -> None:
    """The first transmission of every third chunk is lost: both retransmit the same bytes."""
    timing = Timing(initial_rto=0.005, min_rto=0.005, max_rto=0.05, chunk_deadline=5)

    def drop(msg: wire.Message) -> bool:
        return msg.chunk % 3 == 0 and not msg.flags & wire.Flag.RETRANS

    vectors = [np.arange(200, dtype=np.int32)]
    sent_py, out_py, agg_py = _record(Aggregator, False, vectors, timing, drop)
    sent_c, out_c, agg_c = _record(_native_maker(native), False, vectors, timing, drop)
    assert np.array_equal(out_c[0], vectors[0]) and np.array_equal(out_py[0], vectors[0])
    retrans_py = sorted(d for d in sent_py if d[1] & wire.Flag.RETRANS)
    retrans_c = sorted(d for d in sent_c if d[1] & wire.Flag.RETRANS)
    assert len(retrans_c) == len(retrans_py) == -(-13 // 3)  # 13 chunks, one retransmission each
    assert retrans_c == retrans_py
    assert sorted(sent_c) == sorted(sent_py)
    assert agg_c.stats.retransmitted == agg_py.stats.retransmitted == 5
    # back-off doublings happen at most once per timeout interval of wall-clock time, so their
    # count depends on scheduling (2 or 3 here under load); both must have backed off
    assert agg_c.stats.backoffs >= 1 and agg_py.stats.backoffs >= 1


# -- against the fake switch (TEST DOUBLE) ------------------------------------------------

def _run_workers(native: dp.Codec, fake: FakeUdpSwitch, job: int, n: int, window: int,
                 vectors: list[list[np.ndarray]], timing: Timing, ranks: list[int] | None = None,
                 python_ranks: tuple[int, ...] = (), epoch: int = 1,
                 into: bool = False) -> tuple[list[Any], list[Any]]:
    ranks = list(range(n)) if ranks is None else ranks
    results: list[Any] = [None] * n
    errors: list[Any] = [None] * n

    def worker(rank: int) -> None:
        transport = UdpTransport(UdpTransportConfig("127.0.0.1", fake.address[1], "127.0.0.1"))
        try:
            config = JobConfig(job, rank, n, window, K, epoch=epoch)
            agg: Any = (Aggregator(config, transport, timing) if rank in python_ranks
                        else NativeAggregator(config, transport, timing, native.lib))
            if into:  # the agent's way: each result into a buffer that held something else
                results[rank] = []
                for v in vectors[rank]:
                    out = np.full(v.size, 0x5A5A5A5A, np.int32)
                    assert agg.run(v, out=out) is out
                    results[rank].append(out)
            else:
                results[rank] = [agg.run(v) for v in vectors[rank]]
        except AggregationError as error:
            errors[rank] = error
        finally:
            transport.close()

    run_ranks(worker, ranks, timeout=30)
    return results, errors


@pytest.mark.parametrize("into", [False, True], ids=["new-result", "into-buffer"])
@pytest.mark.parametrize("python_ranks", [(), (1,)], ids=["all-native", "mixed"])
def test_lossy_fake_switch_exact_sums(native: dp.Codec, python_ranks: tuple[int, ...], into: bool) -> None:
    n = 3
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(9, n, slot_count=8)
    sizes = [2000, 500, 1]
    vectors = rank_vectors(n, sizes, seed=7)
    with FakeUdpSwitch(fake_switch, impair=(0.1, 0.1, 0.1, 3)) as fake:
        results, errors = _run_workers(native, fake, 9, n, 8, vectors,
                                       Timing(initial_rto=0.02, chunk_deadline=10), python_ranks=python_ranks,
                                       into=into)
    assert errors == [None] * n
    for rank in range(n):
        for i in range(len(sizes)):
            assert np.array_equal(results[rank][i], wrapped_sum(vectors, i))
    counters = fake_switch.jobs[9].counters
    assert counters["contributions"] == n * sum(-(-s // K) for s in sizes)  # never double-counted
    assert counters["duplicates"] > 0


# -- REDUCE/BCAST on owner lanes (planned runs) against the switch's dataplane model -------

OWNERS = (OwnerRange(3, 0, 5), OwnerRange(4, 5, 4))
"""Two owners of a 9-chunk vector (K=16: 144 values)."""


def _owner_round(native: dp.Codec, sw: DataplaneUdpSwitch, python_ranks: tuple[int, ...], rounds: int,
                 timing: Timing, members: tuple[int, ...] = (0, 1, 2, 3, 4)) -> tuple[dict[int, Any], dict[int, Any]]:
    """``rounds`` of: workers REDUCE their vectors, owners collect their chunks' sums and
    BCAST them plus one, workers fetch. Per member its results (or its error)."""
    size = 9 * K - 5
    grads = rank_vectors(3, [size] * rounds, seed=4)
    out: dict[int, Any] = {}
    errors: dict[int, Any] = {}

    def member(rank: int) -> None:
        transport = UdpTransport(UdpTransportConfig("127.0.0.1", sw.address[1], "127.0.0.1"))
        try:
            config = JobConfig(5, rank, 3, 7, K, epoch=1, owners=OWNERS)
            agg: Any = (Aggregator(config, transport, timing) if rank in python_ranks
                        else NativeAggregator(config, transport, timing, native.lib))
            got = []
            for r in range(rounds):
                if rank < 3:
                    agg.reduce_to(grads[rank][r])
                    got.append(agg.fetch(size))
                else:
                    sums = agg.collect(size)
                    got.append(sums)
                    agg.broadcast(sums + 1)
            out[rank] = got
        except AggregationError as error:
            errors[rank] = error
        finally:
            transport.close()

    run_ranks(member, members, timeout=60)
    return out, errors


@pytest.mark.parametrize("python_ranks", [(), (1, 4)], ids=["all-native", "mixed"])
def test_owner_lanes_exact_over_a_lossy_switch(native: dp.Codec, python_ranks: tuple[int, ...]) -> None:
    size, rounds = 9 * K - 5, 3
    grads = rank_vectors(3, [size] * rounds, seed=4)
    with DataplaneUdpSwitch(K, impair=(0.1, 0.1, 0.1, 5)) as sw:
        sw.add_job(5, 3, 7, OWNERS)
        out, errors = _owner_round(native, sw, python_ranks, rounds, Timing(initial_rto=0.02, chunk_deadline=10))
        contributions = int(sw.dataplane.counters["contributions"][5])
    assert not errors
    for r in range(rounds):
        total = wrapped_sum(grads, r)
        owned = {3: slice(0, 5 * K), 4: slice(5 * K, size)}
        for owner, part in owned.items():
            expected = np.zeros(size, np.int32)
            expected[part] = total[part]
            assert np.array_equal(out[owner][r], expected), (owner, r)
        for w in range(3):  # each owner's chunks of (its sums + 1): the whole vector, + 1
            assert np.array_equal(out[w][r], (total.astype(np.int64) + 1).astype(np.int32)), (w, r)
    # every copy counted once per member: 9 chunks x (3 workers + owner) x (REDUCE + BCAST)
    assert contributions == rounds * 9 * 4 * 2


def test_a_dead_owner_is_named_by_the_native_workers(native: dp.Codec) -> None:
    with DataplaneUdpSwitch(K) as sw:
        sw.add_job(5, 3, 7, OWNERS)
        _, errors = _owner_round(native, sw, (), 1, Timing(initial_rto=0.01, max_rto=0.1, chunk_deadline=0.8),
                                 members=(0, 1, 2, 3))
    # nobody collects owner 4's chunks: the workers' REDUCE stops there (and owner 3's BCAST
    # then waits for the workers' requests, which never come)
    assert {0, 1, 2} <= set(errors)
    for rank in (0, 1, 2):
        error = errors[rank]
        assert error.missing == (4,), (rank, error)
        assert "(switch bitmap 0x7 of 3 workers and owner 4)" in str(error)


def test_dead_worker_is_named(native: dp.Codec) -> None:
    n = 4
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(3, n, slot_count=4)
    timing = Timing(initial_rto=0.01, max_rto=0.1, chunk_deadline=0.8)
    with FakeUdpSwitch(fake_switch) as fake:
        _, errors = _run_workers(native, fake, 3, n, 4, rank_vectors(n, [40], 1), timing, ranks=[0, 1, 3])
    for rank in (0, 1, 3):
        error = errors[rank]
        assert isinstance(error, AggregationError) and error.job == 3 and error.missing == (2,)
        assert f"job 3, worker {rank}: chunk" in str(error)
        assert "missing workers [2] (switch bitmap 0xb of 4 workers)" in str(error)


def test_silent_switch_is_reported(native: dp.Codec) -> None:
    with FakeUdpSwitch(FakeInnetSwitch(K)) as fake:
        fake.silent = True
        transport = UdpTransport(UdpTransportConfig("127.0.0.1", fake.address[1], "127.0.0.1"))
        try:
            agg = NativeAggregator(JobConfig(1, 0, 2, 4, K, epoch=1), transport,
                                   Timing(initial_rto=0.01, max_rto=0.05, chunk_deadline=0.3), native.lib)
            with pytest.raises(AggregationError, match=r"job 1, worker 0: chunk 0 \(slot 0, copy 0\) "
                               r"not complete after 0\.\d+ s \(\d+ retransmissions\): no answer from switch"):
                agg.run(np.arange(10, dtype=np.int32))
            assert agg.stats.retransmitted >= 3
            assert agg.position == 0
        finally:
            transport.close()


def test_stale_epoch_raises_and_same_epoch_stale_is_ignored(native: dp.Codec) -> None:
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(4, 1, slot_count=4, epoch=5)
    with FakeUdpSwitch(fake_switch) as fake:
        _, errors = _run_workers(native, fake, 4, 1, 4, rank_vectors(1, [50], 2), SLOW_RTO, epoch=4)
    error = errors[0]
    assert isinstance(error, StaleEpochError)
    assert (error.epoch, error.switch_epoch) == (4, 5)
    assert str(error).startswith("job 4, worker 0: the switch's job is at epoch 5, this worker set "
                                 "attached at epoch 4: another worker set attached")


# -- selection and fallback ----------------------------------------------------------------

def test_datapath_names_are_checked() -> None:
    with pytest.raises(ValueError, match=r"agent datapath 'fast': expected one of native, python"):
        dp.check_datapath("fast")


def test_fallback_without_compiler_prints_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from innet import native_build as build

    monkeypatch.setenv("CC", "no-such-cc-for-innet")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    build.load_library.cache_clear()
    try:
        codec = dp.select("native", who="innet agent (job 1, worker 0)")
    finally:
        build.load_library.cache_clear()
    assert codec.name == "python"
    err = capsys.readouterr().err
    assert err == ("innet agent (job 1, worker 0): native datapath unavailable (no C compiler "
                   "(no-such-cc-for-innet) on PATH: set CC or install gcc); using the python datapath\n")
    assert dp.select("python").name == "python"
