"""AdaTopK follows the link: when the rate of a boundary changes mid-run, the receiver's
throughput meter sees it, the sender's ratio moves, and the bytes on the wire change within a
few steps.

The two stages run as threads with the real runners, codecs, meters and tags, but in virtual
time (``innet.testbed.geo.virtual``): what the meters measure, and so every ratio and byte
count, follows from the link model alone, whatever the machine's load and the threads'
scheduling (a version timed by real sleeps failed 1 run in 6 on a loaded 2-core machine).
The first test runs the bench's default AdaTopK (``link_compression`` of a default language
model config: floor at the fixed ratio, cap 1, int8 warm-up, the hold); the others an unheld
and a held AdaTopK with a low floor."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from innet.host.geo.channel import LinkShape, QueueChannel
from innet.host.geo.compress import CompressionConfig
from innet.host.geo.rad import StageRunner, StageStats
from innet.host.geo.stage_process import build_model, build_task
from innet.host.geo.specs import GptSpec, LmSpec
from innet.host.geo.stages import Sgd, partition
from innet.testbed.geo.config import GeoBenchConfig, link_compression
from innet.testbed.geo.virtual import TimedStage, VirtualClock, VirtualLink

STEPS, MICROBATCHES = 24, 2
SLOW, FAST = 0.2, 200.0
"""Mbit/s: a dense message takes ~0.3 s at 0.2 Mbit/s (far more than the modelled compute), well
under 1 ms at 200."""
DELAY_MS = 1.0
COMPUTE_S = 0.02
"""Modelled forward and backward time per microbatch, on both stages."""
CHANGES = {8: FAST, 16: SLOW}
"""Step -> the boundary's new rate (both directions), set before that step starts."""


def _run(config: CompressionConfig, steps: int = STEPS, changes: dict[int, float] = CHANGES) -> StageStats:
    """Train two stages for ``steps`` with the rate changes of ``changes``; the first stage's stats."""
    graph = build_model(GptSpec(vocab=32, d=32, heads=2, layers=2, seq=16))
    task = build_task(LmSpec(vocab=32, seq=16), 0)
    params = graph.init_params(0)
    clocks = [VirtualClock(), VirtualClock()]
    a, b = QueueChannel.pair("boundary")
    ends = [VirtualLink(a, clocks[0], LinkShape(SLOW, DELAY_MS)), VirtualLink(b, clocks[1], LinkShape(SLOW, DELAY_MS))]
    plans = partition(graph, (6,))
    runners = [StageRunner(TimedStage(graph, plan, {n: params[n] for n in plan.nodes if n in params}, clocks[i],
                                      COMPUTE_S),
                           ends[1] if i else None, None if i else ends[0], Sgd(0.1, 0.9),
                           compress_next=None if i else config, compress_prev=config if i else None, timeout=30.0,
                           clock=clocks[i], timer=clocks[i])
               for i, plan in enumerate(plans)]
    batches = task.batches(8, MICROBATCHES, 1000)
    data = [next(batches) for _ in range(steps)]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def work(r: StageRunner) -> None:
        try:
            r.probe()
            for s, mbs in enumerate(data):
                barrier.wait(30.0)
                if r.index == 0 and s in changes:
                    for end in ends:
                        end.shape = LinkShape(changes[s], DELAY_MS)
                barrier.wait(30.0)
                r.step(s, mbs)
        except BaseException as error:  # reported below
            errors.append(error)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(r,)) for r in runners]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120.0)
    assert not any(t.is_alive() for t in threads), "a stage thread did not finish within 120 s"
    assert not errors, errors[0]
    return runners[0].stats


def _per_step(values: list[float], steps: int = STEPS) -> list[float]:
    return list(np.array(values, float).reshape(steps, MICROBATCHES).mean(axis=1))


DEFAULT_STEPS = 40
DEFAULT_CHANGES = {20: FAST, 32: SLOW}
"""After the default's 10 int8 warm-up steps: slow until step 20, fast until 32, slow again."""


@pytest.mark.timeout(180)
def test_the_default_adatopk_goes_dense_on_a_fast_link_and_back_to_its_floor_on_a_slow_one() -> None:
    config = link_compression(GeoBenchConfig(task="lm"), "adatopk")
    assert config is not None and config.mode == "adatopk" and config.max_ratio == 1.0
    assert config.min_ratio == GeoBenchConfig().topk_ratio and config.warmup_steps > 0
    stats = _run(config, DEFAULT_STEPS, DEFAULT_CHANGES)
    sizes = _per_step(stats.sizes_next, DEFAULT_STEPS)
    ratios = _per_step(stats.ratios_next, DEFAULT_STEPS)
    assert ratios[config.warmup_steps + 2:20] == [config.min_ratio] * (18 - config.warmup_steps), ratios
    slow = np.median(sizes[config.warmup_steps + 2:20])
    # the hold lets the ratio rise only after ratio_patience messages above its band
    up = next(s for s in range(20, DEFAULT_STEPS) if ratios[s] == 1.0)
    assert up <= 20 + 2 * config.ratio_patience // MICROBATCHES + 1, ratios
    assert sizes[up + 1] > 3 * slow, (sizes, ratios)
    down = next(s for s in range(32, DEFAULT_STEPS) if ratios[s] < 1.0)
    assert down <= 32 + 2, ratios
    assert ratios[-1] == config.min_ratio and sizes[-1] < np.median(sizes[up + 1:32]) / 3, (sizes, ratios)


UNHELD = CompressionConfig("adatopk", min_ratio=0.05, row_topk=True, activations="topk", gradients="masked",
                           values="int8", reference="key", ratio_band=0.0, ratio_patience=1)


@pytest.mark.timeout(180)
def test_the_meter_reads_the_link_rate_and_the_bytes_follow_its_changes_within_a_few_steps() -> None:
    stats = _run(UNHELD)
    sizes, ratios = _per_step(stats.sizes_next), _per_step(stats.ratios_next)
    rates = [r / 1e6 for r in stats.rate_next_bps]
    # the receiver's estimate, as it reached the sender: the slow rate, the fast one, the slow one
    # again (the one-way delay from the start-up probe excludes the probe's own serialisation, so
    # a dense message that takes 0.7 ms at 200 Mbit/s is not lost in a delay read ~2 ms high)
    assert rates[0] == pytest.approx(SLOW, rel=0.05), rates
    assert any(r == pytest.approx(FAST, rel=0.05) for r in rates), rates
    assert max(rates) <= FAST * 1.05, rates
    assert rates[-1] == pytest.approx(SLOW, rel=0.05), rates
    slow_before = np.median(sizes[4:8])
    assert max(ratios[4:8]) < 1.0, (sizes, ratios)  # compressed: dense does not fit the slow link
    up = next(s for s in range(8, STEPS) if sizes[s] > 3 * slow_before)
    assert up <= 8 + 4, (sizes, ratios)
    fast = np.median(sizes[12:16])
    down = next(s for s in range(16, STEPS) if sizes[s] < fast / 3)
    assert down <= 16 + 4, (sizes, ratios)
    assert min(ratios[12:16]) == 1.0 > max(ratios[20:]), (sizes, ratios)


@pytest.mark.timeout(180)
def test_the_held_ratio_rises_patience_messages_late_and_drops_at_once() -> None:
    """With the hold (``ratio_patience`` messages above the band before each rise), the rise
    after the speed-up comes later than without it, by at most two rises' patience (the
    estimate climbs in two stages); the drop after the slow-down is as prompt as without it,
    and the held ratio changes less often."""
    patience = 4
    held = CompressionConfig("adatopk", min_ratio=0.05, row_topk=True, activations="topk", gradients="masked",
                             values="int8", reference="key", ratio_band=0.25, ratio_patience=patience)
    free, slow = _run(UNHELD).ratios_next, _run(held).ratios_next
    first = 8 * MICROBATCHES

    def rise(ratios: list[float]) -> int:
        return next(i for i in range(first, len(ratios)) if ratios[i] == 1.0)

    def drop(ratios: list[float]) -> int:
        return next(i for i in range(2 * first, len(ratios)) if ratios[i] < 1.0)

    assert rise(free) < rise(slow) <= rise(free) + 2 * patience, (free, slow)
    assert drop(slow) == drop(free), (free, slow)
    assert _changes(slow) < _changes(free), (free, slow)


def _changes(ratios: list[float]) -> int:
    return sum(a != b for a, b in zip(ratios, ratios[1:]))
