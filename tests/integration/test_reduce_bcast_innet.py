"""Reduce-to and broadcast (REDUCE/BCAST) through p4/innet.p4 on innet's executor: python
Aggregators of the workers and owners in threads, frame tunnels to the switch's UDP ports
(lossless and lossy), several steps of per-layer REDUCE then BCAST with plain CONTRIB
operations in between; every result exact, and the switch's counters show each chunk
counted once per member."""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np
import pytest

from innet.wire.owners import OwnerRange
from innet.host.agent.aggregator import AggregationError, Aggregator, Timing
from innet.host.agent.transport import open_transport
from innet.switch.ports import LossSpec

from testkit.innet_test_switch import InnetTestSwitch
from testkit.rank_sums import int32_sum

K = 64
N = 3
OWNERS = (OwnerRange(3, 0, 12), OwnerRange(4, 12, 12))
"""Rank 3 owns chunks 0..11, rank 4 chunks 12..23."""
LAYERS = ((0, 700), (11, 800))
"""(first chunk, elements): layer 0 is rank 3's, layer 1 spans both owners."""


def owned(rank: int, first_chunk: int, size: int) -> np.ndarray:
    """Mask of the elements of an operation that ``rank`` owns."""
    chunk = first_chunk + np.arange(size) // K
    o = next(o for o in OWNERS if o.rank == rank)
    return (chunk >= o.first_chunk) & (chunk < o.stop)


def run_members(switch: InnetTestSwitch, timing: Timing, steps: int, seed: int) -> tuple[dict[str, Any], list[Aggregator]]:
    configs = switch.add_job(5, N, window=16, timing=timing, owners=OWNERS, owner_slots=4)
    rng = np.random.default_rng(seed)
    grads = {(w, s, layer): rng.integers(-2**31, 2**31, size, dtype=np.int64).astype(np.int32)
             for w in range(N) for s in range(steps) for layer, (_, size) in enumerate(LAYERS)}
    results: dict[str, Any] = {}
    errors: list[BaseException] = []
    aggs: list[Aggregator] = []

    def member(config: Any, body: Callable[[Aggregator], None]) -> None:
        transport = open_transport(config.transport)
        try:
            agg = Aggregator(config.job, transport, timing)
            aggs.append(agg)
            body(agg)
        except BaseException as error:  # reported by the test
            errors.append(error)
        finally:
            transport.close()

    def worker(rank: int) -> Callable[[Aggregator], None]:
        def body(agg: Aggregator) -> None:
            for s in range(steps):
                for layer in reversed(range(len(LAYERS))):  # backward order
                    agg.reduce_to(grads[(rank, s, layer)], LAYERS[layer][0])
                results[f"plain {rank} {s}"] = agg.run(np.full(5, rank + s, np.int32))
                for layer, (first, size) in enumerate(LAYERS):  # forward order
                    results[f"fetch {rank} {s} {layer}"] = agg.fetch(size, first)
        return body

    def owner(rank: int) -> Callable[[Aggregator], None]:
        def body(agg: Aggregator) -> None:
            for s in range(steps):
                for layer in reversed(range(len(LAYERS))):
                    first, size = LAYERS[layer]
                    results[f"collect {rank} {s} {layer}"] = agg.collect(size, first)
                for layer, (first, size) in enumerate(LAYERS):
                    # the "update": its sum, negated, plus the step, on this owner's part
                    total = results[f"collect {rank} {s} {layer}"]
                    agg.broadcast(np.where(owned(rank, first, size), -total + s, 99), first)
        return body

    bodies = [worker(r) for r in range(N)] + [owner(o.rank) for o in OWNERS]
    threads = [threading.Thread(target=member, args=(c, b)) for c, b in zip(configs, bodies)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]
    for s in range(steps):
        assert all(np.array_equal(results[f"plain {r} {s}"], np.full(5, sum(range(N)) + N * s)) for r in range(N))
        for layer, (first, size) in enumerate(LAYERS):
            total = int32_sum([grads[(w, s, layer)] for w in range(N)])
            for o in OWNERS:
                mask = owned(o.rank, first, size)
                got = results[f"collect {o.rank} {s} {layer}"]
                assert np.array_equal(got[mask], total[mask]) and not got[~mask].any()
            want = (-total.astype(np.int64) + s).astype(np.int32)
            for r in range(N):
                assert np.array_equal(results[f"fetch {r} {s} {layer}"], want), (r, s, layer)
    return results, aggs


def chunks(size: int) -> int:
    return -(-size // K)


def test_reduce_to_and_broadcast_exact() -> None:
    steps = 3
    with InnetTestSwitch(num_ports=N + len(OWNERS)) as switch:
        _, aggs = run_members(switch, Timing(initial_rto=0.05, chunk_deadline=15), steps, seed=1)
        counters = switch.counters(5)
    owner_chunks = sum(chunks(size) for _, size in LAYERS)
    plain_chunks = 1
    # every REDUCE and BCAST copy: N workers + 1 owner; CONTRIB: N workers
    assert counters["contributions"] == steps * (2 * owner_chunks * (N + 1) + plain_chunks * N)
    assert counters["completions"] == steps * (2 * owner_chunks + plain_chunks)
    assert counters["drops"] == 0


def test_reduce_to_and_broadcast_under_loss() -> None:
    """5 % of the switch's outputs lost, duplicated or reordered: retransmissions recover
    results and acknowledgements, duplicates are never counted."""
    steps = 2
    loss = LossSpec(drop=0.05, duplicate=0.05, reorder=0.05, seed=3)
    with InnetTestSwitch(num_ports=N + len(OWNERS), loss=loss) as switch:
        _, aggs = run_members(switch, Timing(initial_rto=0.03, chunk_deadline=20), steps, seed=2)
        counters = switch.counters(5)
    owner_chunks = sum(chunks(size) for _, size in LAYERS)
    assert counters["contributions"] == steps * (2 * owner_chunks * (N + 1) + N)
    assert counters["duplicates"] > 0
    assert sum(a.stats.retransmitted for a in aggs) > 0


def test_missing_owner_is_named_at_the_deadline() -> None:
    """Workers fetch a BCAST whose owner never sends: the error names the owner's rank."""
    with InnetTestSwitch(num_ports=N + len(OWNERS)) as switch:
        configs = switch.add_job(6, N, window=16, owners=OWNERS, owner_slots=4)
        transport = open_transport(configs[0].transport)
        others = [open_transport(c.transport) for c in configs[1:N]]
        try:
            timing = Timing(initial_rto=0.02, chunk_deadline=1.0)
            peers = [Aggregator(c.job, t, timing) for c, t in zip(configs[1:N], others)]
            threads = [threading.Thread(target=lambda a=a: pytest.raises(AggregationError, a.fetch, 10, 13))
                       for a in peers]
            for t in threads:
                t.start()
            with pytest.raises(AggregationError, match=r"missing workers \[4\] \(switch bitmap 0x7 of 3 workers "
                                                       r"and owner 4\)") as info:
                Aggregator(configs[0].job, transport, timing).fetch(10, 13)
            assert info.value.missing == (4,)
            for t in threads:
                t.join(timeout=10)
        finally:
            transport.close()
            for t in others:
                t.close()


@pytest.mark.parametrize("datapath", ["native", "python"])
def test_agents_reduce_to_collect_broadcast_fetch(datapath: str) -> None:
    """The same through Agent processes (workers' plain lane on the native loop when it
    builds): float gradients quantized at an agreed scale, float32 parameters bit for bit,
    and a plain allreduce between them."""
    from dataclasses import replace

    from innet.wire import quantize as qz
    from innet.host.agent.agent import Agent

    size = 1500  # chunks 0..23: both owners
    frac = qz.sum_frac_bits(4.0, N)
    with InnetTestSwitch(num_ports=N + len(OWNERS)) as switch:
        configs = [replace(c, datapath=datapath) for c in switch.add_job(7, N, window=16, owners=OWNERS)]
        agents: list[Agent] = []
        try:
            for c in configs:
                agents.append(Agent(c).start())
            workers, owners = agents[:N], agents[N:]
            rng = np.random.default_rng(4)
            grads = [rng.uniform(-4, 4, size).astype(np.float32) for _ in range(N)]
            params = rng.standard_normal(size).astype(np.float32)
            out: dict[str, Any] = {}

            def call(name: str, fn: Callable[[], Any]) -> threading.Thread:
                t = threading.Thread(target=lambda: out.__setitem__(name, fn()))
                t.start()
                return t

            threads = [call(f"w{r}", lambda r=r: workers[r].reduce_to(grads[r], frac)) for r in range(N)]
            threads += [call(f"o{i}", lambda a=a: a.collect(size, frac)) for i, a in enumerate(owners)]
            for t in threads:
                t.join(timeout=60)
            exact = sum(np.round(g.astype(np.float64) * 2.0 ** frac) for g in grads) / 2.0 ** frac
            for i, o in enumerate(OWNERS):
                mask = owned(o.rank, 0, size)
                assert np.array_equal(out[f"o{i}"][mask], exact[mask].astype(np.float32))
            threads = [call(f"o{i}", lambda a=a: a.broadcast_int(params.view(np.int32))) for a in owners]
            threads += [call(f"w{r}", lambda r=r: workers[r].fetch_int(size)) for r in range(N)]
            for t in threads:
                t.join(timeout=60)
            for r in range(N):
                assert out[f"w{r}"].view(np.float32).tobytes() == params.tobytes()
            threads = [call(f"w{r}", lambda r=r: workers[r].allreduce_int(np.arange(70, dtype=np.int32)))
                       for r in range(N)]
            for t in threads:
                t.join(timeout=60)
            assert all(np.array_equal(out[f"w{r}"], N * np.arange(70)) for r in range(N))
            if datapath == "python":
                assert {a.datapath for a in agents} == {"python"}
        finally:
            for a in agents:
                a.close()
