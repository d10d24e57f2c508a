"""What one run's stage records say: targets reached, links as probed, what the slow link sent,
and the effect of a mid-run slowdown or rate change, each as a record.

These read the stage processes' output records (``launch``'s JSON lines) once, after a run,
so the runners only start processes and the report only formats records.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np

from innet.host.geo.opfence import Plan, opfence, predict
from innet.host.geo.stage_process import StageJob
from innet.testbed.geo.config import GeoBenchConfig, target_loss
from innet.testbed.geo.jobs import plan_sites
from innet.testbed.geo.plan import Planned
from innet.testbed.geo.records import (Curve, EvalPoint, LinkCheck, RateChangeEffect, ReplanPrediction,
                                       StageDone, StragglerEffect, Targets, TrainPoint)

LINK_TOLERANCE = 0.10
"""How far a WAN link's probed rate or delay may be from its configuration."""


def targets(config: GeoBenchConfig, evals: Sequence[EvalPoint]) -> Targets:
    """Training time to the target test accuracy and to the target test loss (None: not reached)."""
    goal = target_loss(config)
    return Targets(next((e.t for e in evals if e.accuracy >= config.target_accuracy), None),
                   next((e.t for e in evals if e.loss <= goal), None), goal)


def curves(steps: Sequence[TrainPoint], evals: Sequence[EvalPoint]) -> tuple[Curve, Curve, Curve]:
    """Training loss, test accuracy and test loss against training wall-clock."""
    return (tuple((r.t, r.loss) for r in steps), tuple((e.t, e.step, e.accuracy) for e in evals),
            tuple((e.t, e.step, e.loss) for e in evals))


def median_step(times: Sequence[float]) -> tuple[float, np.ndarray, int]:
    """The median step time after warm-up (up to 3 steps), the step times, and the warm-up."""
    deltas = np.diff([0.0, *times])
    warm = min(3, len(deltas) - 1)
    return float(statistics.median(deltas[warm:])), deltas, warm


def wan_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Bytes each WAN link end sent during one run (every pipeline, probes and evaluation included)."""
    return {iface: after[iface] - before[iface] for iface in after}


def sends_label(codecs_fwd: dict[str, int], codecs_bwd: dict[str, int], ratio: float | None) -> str:
    """What a link carried, from the stages' counts: ``fwd top-k+int8 r=0.25 94%, int8 6% | bwd ...``."""
    def side(counts: dict[str, int]) -> str:
        total = sum(counts.values())
        if not total:
            return "-"
        parts = []
        for name, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            r = f" r={ratio:.2f}" if ratio is not None and name.startswith("top-k") else ""
            parts.append(f"{name}{r}" + (f" {n / total:.0%}" if n != total else ""))
        return ", ".join(parts)

    return f"fwd {side(codecs_fwd)} | bwd {side(codecs_bwd)}"


def link_check(plan: Plan, sites: Sequence[str], done: Sequence[StageDone]) -> tuple[LinkCheck, ...]:
    """Each boundary's WAN link as configured and as the stages' start-up probe measured it (rate
    from a 256 KiB round trip against a 1-byte one, again larger on a fast link, one-way delay half
    the 1-byte round trip),
    and whether both are within ``LINK_TOLERANCE`` of the configuration."""
    out = []
    for i, link in enumerate(plan.links):
        bps, delay_s = done[i].bandwidth_next_bps, done[i].delay_next_s
        if bps is None or delay_s is None:
            continue
        rate_ok = abs(bps / 1e6 - link.bw_mbps) <= LINK_TOLERANCE * link.bw_mbps
        delay_ok = abs(delay_s * 1e3 - link.delay_ms) <= LINK_TOLERANCE * link.delay_ms + 0.5  # +0.5 ms: timer noise
        out.append(LinkCheck(f"{sites[i]}-{sites[i + 1]}", link.bw_mbps, link.delay_ms, bps / 1e6, delay_s * 1e3,
                             rate_ok and delay_ok))
    return tuple(out)


def straggler_effect(config: GeoBenchConfig, planned: Planned, plan: Plan, outputs: Any,
                     step_deltas: Sequence[float]) -> StragglerEffect:
    """What the mid-run slowdown did: median step time and the straggler's stage compute per
    step before and after, the speed that implies, and the plan OP-Fence would make with it
    (computed after the run; the run itself keeps its plan)."""
    assert config.straggler is not None
    site, at, share = config.straggler
    stage = plan_sites(config, plan).index(site)
    compute = [r["s"] for r in outputs[0][stage].of("compute")]
    warm = min(3, at)
    before_c, after_c = compute[warm:at + 1], compute[at + 2:]
    before_s, after_s = list(step_deltas[warm:at + 1]), list(step_deltas[at + 2:])
    effect = StragglerEffect(site, at, share, stage, statistics.median(before_s) if before_s else None,
                             statistics.median(after_s) if after_s else None,
                             statistics.median(before_c) if before_c else None,
                             statistics.median(after_c) if after_c else None)
    if not (before_c and after_c):
        return effect
    assert effect.compute_before_s is not None and effect.compute_after_s is not None
    old = planned.site_speeds.get(site, 1.0)
    new = old * effect.compute_before_s / effect.compute_after_s
    speed = dict(planned.network.speed or {})
    speed.update({h.name: new for h in config.topology.workers if h.group == site})
    net = replace(planned.network, speed=speed)
    m = config.microbatches
    again = opfence(planned.graph, planned.workload, net, planned.clusters, m)
    kept = predict(planned.graph, planned.workload, net, plan.order, plan.cuts, m)
    return replace(effect, speed_before=old, speed_after=new,
                   replan=ReplanPrediction(tuple(plan_sites(config, again)), tuple(again.cuts), again.step_s,
                                           kept.step_s))


def rate_change_effect(config: GeoBenchConfig, plan: Plan, done: Sequence[StageDone],
                       applied: bool) -> RateChangeEffect:
    """AdaTopK's ratio on the changed link, per step (mean of the step's forward messages):
    before the change, and each step after it. The first stage's messages of step ``at + 1``
    may already be out when the last stage reports ``at``, so the change shows from there."""
    assert config.rate_change is not None
    a, b, at, mbps = config.rate_change
    sites = plan_sites(config, plan)
    link = next((i for i in range(len(sites) - 1) if {sites[i], sites[i + 1]} == {a, b}), None)

    def per_step(values: list[float]) -> tuple[float, ...]:
        m = config.microbatches
        return tuple(float(np.mean(values[s * m:(s + 1) * m])) for s in range(len(values) // m))

    ratios = list(done[link].ratios_next) if link is not None else []
    rates = list(done[link].rates_next_bps) if link is not None else []
    before_mbps = plan.links[link].bw_mbps if link is not None else None
    return RateChangeEffect(f"{a}-{b}", at, before_mbps, mbps, applied, link, per_step(ratios),
                            tuple(r / 1e6 for r in per_step(rates)))


class AtStep:
    """An ``on_record`` piece that runs ``action`` once, when stage ``stage`` reports training
    step ``step`` (a straggler's slowdown, a WAN rate change). It runs on a stage's output
    reader thread, so an error is kept for the caller instead of ending that thread."""

    def __init__(self, stage: int, step: int, action: Callable[[], None]) -> None:
        self.stage, self.step, self.action = stage, step, action
        self.fired = False
        self.error: Exception | None = None

    def __call__(self, job: StageJob, record: dict[str, Any]) -> None:
        if self.fired or job.index != self.stage or record.get("event") != "step" or record.get("step") != self.step:
            return
        self.fired = True
        try:
            self.action()
        except Exception as error:  # noqa: BLE001  (reported after the run, named)
            self.error = error


__all__ = ["AtStep", "LINK_TOLERANCE", "curves", "link_check", "median_step", "rate_change_effect", "sends_label",
           "straggler_effect", "targets", "wan_delta"]
