"""``innet geo bench``: geo-distributed training across emulated sites, placements and compressors.

For one task (scikit-learn digits with an MLP, or the shipped synthetic language-model task
with a toy GPT-2), the benchmark measures the workload, plans a naive placement (sites in
the order given, equal operator counts per stage) and OP-Fence's, then trains each
(placement, compression) pair for the same number of steps as separate stage processes,
one per site, linked by TCP with each WAN link's rate and delay emulated in the transport.
With ``replicas > 1`` every site runs that many pipelines' stages data parallel, their
gradients summed by the site's innet switch (GeoTestbed, loopback). With ``testbed="mininet"``
(root) the sites are Mininet stars around their own switches and every stage runs on a site
host: activations and gradients cross the WAN veths (rate by HTB; delay by netem, or by the
switches' WAN ports where the kernel has no netem), gradients are summed inside each site by
its switch.

Reported per run: mean step time (after warm-up) next to the predicted one, time to the
target test accuracy, bytes per step over the WAN, the mean compression ratio, and the
loss and accuracy against training wall-clock (evaluation time excluded), in JSON and PNG.

This module runs a benchmark from its parts: :mod:`~innet.testbed.geo.config` (what runs),
:mod:`~innet.testbed.geo.plan` (measure and plan), :mod:`~innet.testbed.geo.pipeline` and
:mod:`~innet.testbed.geo.dp` (the runs), :mod:`~innet.testbed.geo.records` (what they measured)
and :mod:`~innet.testbed.geo.report` (table, plot, JSON).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from typing import Any, Callable, Sequence

from innet.testbed.core.machine import describe as machine
from innet.testbed.geo.config import (COMPRESSIONS, DEFAULT_RUNS, DEFAULT_TARGET_LOSS, PLACEMENTS, REFERENCE,
                                      STOP_AHEAD, GeoBenchConfig, GeoBenchError, link_compression, target_loss)
from innet.testbed.geo.dp import run_dp
from innet.testbed.geo.jobs import stage_jobs
from innet.testbed.geo.measures import LINK_TOLERANCE, link_check, sends_label
from innet.testbed.geo.pipeline import run_pipeline, run_replanned
from innet.testbed.geo.plan import Planned, measure_speeds, plan_all, site_quotas
from innet.testbed.geo.records import BenchResult, RunComparison, GeoRow
from innet.testbed.geo.report import combine, link_check_line, plot, save, table


def run_one(config: GeoBenchConfig, planned: Planned, placement: str, compression: str, geo_tb: Any = None,
            quotas: Any = None) -> GeoRow:
    """One run of ``placement`` / ``compression``: data parallel, re-planned on a straggler, or plain."""
    if placement == "dp":
        return run_dp(config, planned, compression, geo_tb, quotas)
    if config.replan:
        return run_replanned(config, planned, placement, compression, geo_tb, quotas)
    return run_pipeline(config, planned, placement, compression, geo_tb, quotas)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def compare(rows: Sequence[GeoRow]) -> tuple[GeoRow, ...]:
    """Every row with OP-Fence + AdaTopK's speedup against it (step, time to accuracy, time to
    loss) and its test loss at the same training wall time, the shortest run's (its last
    evaluation at or before then)."""
    ref = next((r for r in rows if (r.placement, r.compression) == REFERENCE), None)
    walls = [r.train_wall_s for r in rows if r.train_wall_s]
    wall = min(walls) if walls else None
    out = []
    for r in rows:
        seen = [v for t, _, v in r.test_loss_curve if wall is not None and t <= wall * (1 + 1e-9)]
        out.append(r.with_comparison(RunComparison(
            speedup_step=r.step_s / ref.step_s if ref else None,
            speedup_tta=_ratio(r.targets.time_to_accuracy_s, ref.targets.time_to_accuracy_s) if ref else None,
            speedup_ttl=_ratio(r.targets.time_to_loss_s, ref.targets.time_to_loss_s) if ref else None,
            equal_wall_s=wall, loss_at_equal_wall=(seen[-1] if seen else None) if wall is not None else None)))
    return tuple(out)


def run(config: GeoBenchConfig, progress: Callable[[str], None] = lambda m: None) -> BenchResult:
    """Every run of ``config.runs`` on one testbed; the result document. Ctrl-C during the
    runs ends them early: the document holds the rows so far and ``partial`` is True."""
    rows: list[GeoRow] = []
    partial = False
    geo_tb = open_testbed(config)
    quotas = None
    try:
        quotas = site_quotas(config) if config.speeds or config.straggler else None
        planned = plan_all(config, quotas, geo_tb)
        if planned.site_speeds:
            progress("measured site speeds (probe, relative to an unlimited process): "
                     + ", ".join(f"{s} {v:.2f}" for s, v in planned.site_speeds.items()))
        for name, plan in planned.plans.items():
            progress(plan.describe(name))
        try:  # Ctrl-C: the runs so far are kept, the document says it is partial
            for placement, compression in config.runs:
                progress(f"training {placement} / {compression} ...")
                row = run_one(config, planned, placement, compression, geo_tb, quotas)
                progress(f"  step {row.step_s * 1e3:.1f} ms (predicted {_ms(row.predicted_step_s)}), "
                         f"time to {config.target_accuracy:.0%}: {row.targets.time_to_accuracy_s}, "
                         f"final accuracy {row.final_accuracy}")
                progress_details(row, progress)
                rows.append(row)
        except KeyboardInterrupt:
            partial = True
    finally:
        if quotas is not None:
            quotas.close()
        if geo_tb is not None:
            geo_tb.stop()
    settings = {k: v for k, v in asdict(config).items() if k not in ("topology", "out_dir")}
    settings["topology"] = str(config.topology)
    settings["wan_emulation"] = wan_description(config.testbed)
    return BenchResult(date=time.strftime("%Y-%m-%dT%H:%M:%S"), machine=machine(), settings=settings,
                       load_average=tuple(os.getloadavg()), site_speeds=planned.site_speeds, probe_s=planned.probe_s,
                       clusters=planned.clusters, plans={k: p.describe(k) for k, p in planned.plans.items()},
                       rows=compare(rows), partial=partial)


def _ms(v: float | None) -> str:
    return f"{v * 1e3:.1f}" if v is not None else "-"


def progress_details(row: GeoRow, progress: Callable[[str], None]) -> None:
    """A run's straggler, rate change and re-plan, one line each, as it ends."""
    from innet.testbed.geo.records import PipelineRow
    from innet.testbed.geo.report import rate_change_line, replan_line, straggler_line

    if not isinstance(row, PipelineRow):
        return
    if row.straggler is not None:
        progress(f"  straggler: {straggler_line(row.straggler)}")
    if row.rate_change is not None:
        progress(f"  rate change: {rate_change_line(row.rate_change)}")
    if row.replan is not None:
        progress(f"  re-planned: {replan_line(row.replan)}")


def open_testbed(config: GeoBenchConfig) -> Any:
    """The started geo testbed the runs use: Mininet always (stages on the site hosts, WAN
    traffic on the WAN veths); loopback only for data parallel (the site switches), else None."""
    from innet.testbed.core.testbed import TestbedOptions

    from innet.testbed.geo.testbed import GeoTestbed

    if config.testbed == "mininet" or config.replicas > 1:
        return GeoTestbed(config.topology, TestbedOptions(window=32, switch_impl=config.switch_impl),
                          backend=config.testbed).start()
    return None


def wan_description(testbed: str) -> str:
    """Which WAN emulation applies (recorded with every result)."""
    from innet.testbed.geo.mininet import wan_emulation

    if testbed == "loopback":
        return "transport: rate + delay by the geo transport's user-space shaper, loopback TCP"
    if wan_emulation("mininet") == "netem":
        return "kernel: rate HTB + delay netem on the WAN veths (Mininet)"
    return "switch: rate HTB on the WAN veths (Mininet), delay by the site switches' WAN port stage " \
           "(innet-switch --port-delay; no netem in this kernel)"


__all__ = ["COMPRESSIONS", "DEFAULT_RUNS", "DEFAULT_TARGET_LOSS", "GeoBenchConfig", "GeoBenchError", "LINK_TOLERANCE",
           "PLACEMENTS", "REFERENCE", "STOP_AHEAD", "combine", "compare", "link_check", "link_check_line",
           "link_compression", "measure_speeds", "open_testbed", "plan_all", "plot", "run", "run_one", "save",
           "sends_label", "stage_jobs", "table", "target_loss", "wan_description"]
