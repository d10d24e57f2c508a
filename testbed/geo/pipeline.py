"""A pipeline run: one stage process per site, trained for the configured steps, measured
into a :class:`~innet.testbed.geo.records.PipelineRow`; and the same run re-planned when a
straggler is found online.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from innet.host.geo.launch import launch
from innet.host.geo.opfence import opfence, predict
from innet.host.geo.specs import DpSpec
from innet.host.geo.stage_process import StageJob
from innet.host.geo.straggler import StragglerConfig, StragglerDetector
from innet.testbed.geo.config import STOP_AHEAD, GeoBenchConfig, GeoBenchError
from innet.testbed.geo.jobs import plan_sites, quota_spawner, stage_elements, stage_jobs, stage_spawner
from innet.testbed.geo.measures import (AtStep, curves, link_check, median_step, rate_change_effect, sends_label,
                                        straggler_effect, targets, wan_delta)
from innet.testbed.geo.plan import Planned
from innet.testbed.geo.records import DetectedStraggler, EvalPoint, PipelineRow, Replan, StageDone, TrainPoint


def run_pipeline(config: GeoBenchConfig, planned: Planned, placement: str, compression: str,
                 geo_tb: Any = None, quotas: Any = None, params_dir: Path | None = None,
                 params_in: Sequence[str] = (), skip_steps: int = 0, stop_file: Path | None = None) -> PipelineRow:
    """One run. With ``stop_file``, a straggler detected online stops the pipeline
    ``STOP_AHEAD`` steps later, at a step boundary every stage reaches (``steps_done`` says where)."""
    plan = planned.plans[placement]
    sites = plan_sites(config, plan)
    pipelines = []
    epochs: dict[str, int] = {}
    for r in range(config.replicas):
        def dp(i: int, site: str, r: int = r) -> DpSpec | None:
            if geo_tb is None or not geo_tb.has_ina(site):
                return None
            if site not in epochs:
                epochs[site] = geo_tb.attach_site(site)
            return DpSpec(geo_tb.dp_agent(site, r, epochs[site], max(1, stage_elements(planned, plan, i))),
                          config.replicas)
        pipelines.append(stage_jobs(config, plan, compression, r, dp if config.replicas > 1 else None, geo_tb,
                                    skip_steps, params_dir, params_in, stop_file))
    wan_before = geo_tb.wan_bytes() if geo_tb is not None else None
    spawn = stage_spawner(config, geo_tb)
    hooks: list[AtStep] = []
    last_stage = len(plan.order) - 1
    if quotas is not None:
        spawn = quota_spawner(spawn, quotas, sites)
        if config.straggler is not None:
            slow_site, slow_step, slow_share = config.straggler
            hooks.append(AtStep(last_stage, slow_step, lambda: quotas.set(slow_site, slow_share)))
    rate_hook: AtStep | None = None
    if config.rate_change is not None and geo_tb is not None:
        a, b, at, mbps = config.rate_change
        rate_hook = AtStep(last_stage, at, lambda: geo_tb.set_wan_rate(a, b, mbps))
        hooks.append(rate_hook)
    detector = StragglerDetector(StragglerConfig(config.straggler_threshold, config.straggler_window))
    watched = pipelines[0][0].data_seed  # launch hands on copies of the jobs: pipeline 0 by its data

    def watch(job: StageJob, record: dict[str, Any]) -> None:
        """Online: every stage's compute per step (pipeline 0) into the detector, as it arrives."""
        if record.get("event") == "compute" and job.data_seed == watched:
            found = detector.observe(job.index, int(record["step"]), float(record["s"]))
            if found is not None and stop_file is not None and not stop_file.exists():
                stop_file.write_text(str(found.step + STOP_AHEAD))

    hooks_all: list[Callable[[StageJob, dict[str, Any]], None]] = [*hooks, watch]

    def on_record(job: StageJob, record: dict[str, Any]) -> None:
        for hook in hooks_all:
            hook(job, record)
    start = time.monotonic()
    try:
        outputs = launch(pipelines, spawn=spawn, timeout=config.timeout_s, on_record=on_record)
    finally:
        if quotas is not None and config.straggler is not None:  # the next run starts at the given speeds
            quotas.set(config.straggler[0], dict(config.speeds).get(config.straggler[0]))
    wall = time.monotonic() - start
    for hook in hooks:
        if hook.error is not None:
            raise GeoBenchError(f"geo bench: the change at step {hook.step} failed: {hook.error}")
    last = outputs[0][-1]
    steps = [TrainPoint.from_json(r) for r in last.of("step")]
    evals = [EvalPoint.from_json(r) for r in last.of("eval")]
    times = [s.t for s in steps]
    step_s, deltas, warm = median_step(times)
    done = [StageDone.from_json(o.of("done")[0]) for pipe in outputs for o in pipe]
    first = done[:len(plan.order)]  # the first pipeline's stages
    # one pipeline's WAN traffic: every stage's sends both ways (probes and evaluation excluded)
    wan_bytes = sum(d.sent_next + d.sent_prev for d in first)
    ratios = tuple(d.mean_ratio_next for d in done if d.mean_ratio_next is not None)
    slow = [i for i, link in enumerate(plan.links) if link.bw_mbps == min(x.bw_mbps for x in plan.links)]
    # the mean ratio of the slowest link's sparsified messages (warm-up and dense ones excluded)
    sparse = [r for i in slow for r in done[i].ratios_next if r < 1.0]
    ratio = float(np.mean(sparse)) if sparse else 1.0
    # the cost model with what each boundary actually carried per microbatch, each direction
    steps_done = len(steps)
    messages = steps_done * config.microbatches
    carried = [(first[i].bytes_next / messages, first[i + 1].bytes_prev / messages)
               for i in range(len(plan.links))]
    predicted = predict(planned.graph, planned.workload, planned.network, plan.order, plan.cuts,
                        config.microbatches, sent_bytes=carried).step_s
    s0 = slow[0] if slow else None
    compute = {sites[i]: statistics.median([r["s"] for r in o.of("compute")][warm:] or [0.0])
               for i, o in enumerate(outputs[0])}
    loss, accuracy, test_loss = curves(steps, evals)
    sizes = first[s0].sizes_next if s0 is not None else None
    ratio_curve = done[slow[0]].ratios_next if slow else None
    return PipelineRow(
        placement=placement, compression=compression, sites=tuple(sites), cuts=tuple(plan.cuts),
        links=tuple(asdict(x) for x in plan.links), step_s=step_s, predicted_step_s=predicted,
        targets=targets(config, evals),
        sends=sends_label(first[s0].codecs_next, first[s0 + 1].codecs_prev,
                          ratio if compression in ("topk", "adatopk") else None) if s0 is not None else "-",
        slow_link_bytes_per_step=sum(carried[s0]) * config.microbatches if s0 is not None else 0.0,
        final_accuracy=evals[-1].accuracy if evals else None, final_loss=steps[-1].loss,
        final_test_loss=evals[-1].loss if evals else None, train_wall_s=times[-1] if times else None,
        wan_bytes_per_step=wan_bytes / max(steps_done, 1), slow_link_ratio=ratio, mean_ratios=ratios, wall_s=wall,
        reduce_s=sum(d.reduce_s for d in done), samples_per_step=config.replicas * config.batch * config.microbatches,
        wan_link_bytes=wan_delta(wan_before, geo_tb.wan_bytes()) if wan_before is not None else None,
        loss_curve=loss, accuracy_curve=accuracy, test_loss_curve=test_loss,
        stage_compute_s=compute, predicted_stage_compute_s=tuple(c * config.microbatches for c in plan.stage_compute_s),
        straggler=straggler_effect(config, planned, plan, outputs, list(deltas))
        if config.straggler is not None and quotas is not None else None,
        stragglers_detected=tuple(DetectedStraggler(sites[d.stage], d.stage, d.step, d.factor, d.baseline_s, d.recent_s)
                                  for d in detector.detections),
        rate_change=rate_change_effect(config, plan, done, rate_hook.fired) if rate_hook is not None else None,
        link_check=link_check(plan, sites, first), slow_link_message_bytes=tuple(sizes) if sizes is not None else None,
        steps_done=steps_done, slow_link_ratio_curve=tuple(ratio_curve) if ratio_curve is not None else None,
        slow_link_probed_bps=done[slow[0]].bandwidth_next_bps if slow else None,
        slow_link_measured_bps=done[slow[0]].measured_rate_next_bps if slow else None)


def _shifted(curve: Sequence[tuple[float, ...]], dt: float, dstep: int) -> tuple[tuple[float, ...], ...]:
    """A test curve ``(t, step, value)`` continued after another: time and step offset."""
    return tuple((t + dt, step + dstep, v) for t, step, v in curve)


def run_replanned(config: GeoBenchConfig, planned: Planned, placement: str, compression: str,
                  geo_tb: Any = None, quotas: Any = None) -> PipelineRow:
    """A straggler, found online, then a re-plan at a step boundary: train until the detector
    (``straggler_threshold`` / ``straggler_window``) names a stage whose compute rose, stop the
    pipeline ``STOP_AHEAD`` steps later, take that site's new speed from the detector's windows,
    plan again with OP-Fence and continue the same training on the new plan (each stage starts
    from the parameters and momentum the old stages wrote; the batches continue in the same
    order). Nothing says where or when: ``straggler`` only slows a site's CPU quota. Stops and
    restarts the stage processes: the re-plan's cost is in the row (``replan_pause_s``). No
    detection: the run is the plain run, with ``replan`` None."""
    assert config.straggler is not None and quotas is not None
    slowed, _, share = config.straggler
    with tempfile.TemporaryDirectory(prefix="innet-geo-replan-") as tmp:
        stop = Path(tmp) / "stop"
        a = run_pipeline(replace(config, replan=False), planned, placement, compression, geo_tb, quotas, Path(tmp),
                         stop_file=stop)
        found = a.stragglers_detected
        if not found or a.steps_done >= config.steps:
            return replace(a, replanned=True, replan=None)
        first = a.steps_done
        site = found[0].site
        speed_after = planned.site_speeds.get(site, 1.0) * found[0].baseline_s / found[0].recent_s
        speed = dict(planned.network.speed or {})
        speed.update({h.name: speed_after for h in config.topology.workers if h.group == site})
        net = replace(planned.network, speed=speed)
        new = opfence(planned.graph, planned.workload, net, planned.clusters, config.microbatches)
        later = replace(planned, network=net, plans={**planned.plans, placement: new})
        files = sorted(str(f) for f in Path(tmp).glob("*.npz"))
        quotas.set(slowed, share)  # the device stays slow
        try:
            b = run_pipeline(replace(config, steps=config.steps - first, straggler=None, replan=False), later,
                             placement, compression, geo_tb, quotas, params_in=files, skip_steps=first)
        finally:
            quotas.set(slowed, dict(config.speeds).get(slowed))
    offset = a.train_wall_s or 0.0
    accuracy = a.accuracy_curve + _shifted(b.accuracy_curve, offset, first)
    replan = Replan(sites_before=a.sites, cuts_before=a.cuts, sites_after=b.sites, cuts_after=b.cuts, at_step=first,
                    speed_after=speed_after, detected=found[0], site=site,
                    step_after_straggler_s=a.straggler.step_after_s if a.straggler is not None else None,
                    step_after_replan_s=b.step_s, predicted_after_replan_s=b.predicted_step_s,
                    replan_pause_s=b.wall_s - (b.train_wall_s or 0.0))
    return replace(
        a, replanned=True, replan=replan, step_s=b.step_s, predicted_step_s=b.predicted_step_s, sites=b.sites,
        cuts=b.cuts, final_accuracy=b.final_accuracy, final_loss=b.final_loss, final_test_loss=b.final_test_loss,
        train_wall_s=offset + (b.train_wall_s or 0.0), wall_s=a.wall_s + b.wall_s,
        loss_curve=a.loss_curve + tuple((t + offset, v) for t, v in b.loss_curve), accuracy_curve=accuracy,
        test_loss_curve=a.test_loss_curve + _shifted(b.test_loss_curve, offset, first),
        targets=replace(a.targets, time_to_accuracy_s=next(
            (t for t, _, v in accuracy if v >= config.target_accuracy), None)))


__all__ = ["run_pipeline", "run_replanned"]
