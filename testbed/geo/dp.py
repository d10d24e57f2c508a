"""Baseline (a): data parallel across sites, every site a full replica as its own process.

On Mininet each site's process runs on the site's first host, gradients over the WAN veths;
on loopback they are local processes with the transport's shaper. Never threads: threads in
one process would share one interpreter lock, slowing the baseline it is measured against.
"""

from __future__ import annotations

import subprocess
import time
from typing import Sequence

from innet.host.geo.launch import SINGLE_THREAD_BLAS, local_spawn
from innet.testbed.geo.config import GeoBenchConfig
from innet.testbed.geo.cpuquota import CpuQuotas
from innet.testbed.geo.measures import curves, median_step, targets, wan_delta
from innet.testbed.geo.plan import Planned
from innet.testbed.geo.records import DpRow, EvalPoint, TrainPoint
from innet.testbed.geo.testbed import GeoTestbed
from innet.testbed.geo.topology import wan_shape


def _dp_processes(config: GeoBenchConfig, sites: Sequence[str], ratio: float, codec: str, geo_tb: GeoTestbed | None,
                  quotas: CpuQuotas | None) -> tuple[list[TrainPoint], list[EvalPoint], float, int, dict[str, int] | None]:
    """One process per site (:mod:`innet.host.geo.dp_process`). Site 0's step and eval records,
    wall time, its bytes sent, WAN bytes per veth (Mininet)."""
    from innet.host.geo.dp_process import DpJob, launch_dp

    topo = config.topology
    # the testbed when the sites run on its Mininet hosts; None: local processes, the WAN in the transport
    mininet = geo_tb if geo_tb is not None and geo_tb.kind == "mininet" else None
    jobs = []
    for i, site in enumerate(sites):
        host = mininet.stage_host(site, 0) if mininet is not None else None
        shapes = tuple(None if j == i or mininet is not None else wan_shape(topo, site, other)
                       for j, other in enumerate(sites))
        jobs.append(DpJob(model=config.model_spec(), task=config.task_spec(), index=i, sites=len(sites),
                          steps=config.steps, batch=dp_batch(config), microbatches=config.microbatches, seed=config.seed,
                          task_seed=config.task_seed, data_seed=config.seed + 1000 * i, lr=config.lr,
                          momentum=config.momentum, ratio=ratio,
                          codec=codec, listen=(topo.host(host).address, 0) if host is not None else ("127.0.0.1", 0),
                          shapes=shapes, eval_every=config.eval_every, timeout=min(config.timeout_s, 300.0)))
    hosts = {h.address: h.name for h in topo.workers}

    def spawn(job: DpJob, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        popen: subprocess.Popen[bytes]
        if mininet is not None:
            popen = mininet.spawn_stage(hosts[job.listen[0]], argv, SINGLE_THREAD_BLAS, name)
        else:
            popen = local_spawn(job, name, argv)
        if quotas is not None:
            quotas.add(sites[job.index], popen.pid)
        return popen

    wan_before = mininet.wan_bytes() if mininet is not None else None
    start = time.monotonic()
    outputs = launch_dp(jobs, spawn, timeout=config.timeout_s)
    wall = time.monotonic() - start
    wan_after = mininet.wan_bytes() if mininet is not None else None
    wan = wan_delta(wan_before, wan_after) if wan_before is not None and wan_after is not None else None
    site0 = outputs[0]
    return ([TrainPoint.from_json(r) for r in site0.of("step")], [EvalPoint.from_json(r) for r in site0.of("eval")],
            wall, int(site0.of("done")[0]["sent"]), wan)


def dp_batch(config: GeoBenchConfig) -> int:
    """Samples per microbatch on each data-parallel site."""
    return config.dp_batch if config.dp_batch is not None else config.batch


def run_dp(config: GeoBenchConfig, planned: Planned, compression: str, geo_tb: GeoTestbed | None = None,
           quotas: CpuQuotas | None = None) -> DpRow:
    """Every site a full replica, gradients averaged over the WAN: dense, int8, or top-k at
    ``topk_ratio``, both with error feedback."""
    topo = config.topology
    sites = list(dict.fromkeys(h.group for h in topo.workers if h.group is not None))
    ratio = config.topk_ratio if compression == "topk" else 1.0
    steps, evals, wall, sent, wan_link_bytes = _dp_processes(
        config, sites, ratio, "int8" if compression == "int8" else "topk", geo_tb, quotas)
    # predicted: the whole model's compute for M microbatches, then every site's gradient
    # crossing the slowest WAN link (all-to-all: one gradient per link direction, sent at once)
    param_bytes = sum(c.param_bytes for c in planned.workload.costs)
    grad_bytes = param_bytes * (ratio * 2 if ratio < 1 else 0.25 + 1 / 256 if compression == "int8" else 1.0)
    wan = [wan_shape(topo, a, b) for a in sites for b in sites if a != b]
    predicted = (config.microbatches * sum(c.compute_s for c in planned.workload.costs)
                 + max(grad_bytes * 8 / ((w.bw_mbps or 1e5) * 1e6) + w.delay_ms / 1e3 for w in wan))
    times = [r.t for r in steps]
    step_s, _, _ = median_step(times)
    sends = {"none": "dense", "int8": "int8 per 256", "topk": f"top-k r={ratio:.2f}"}[compression]
    loss, accuracy, test_loss = curves(steps, evals)
    return DpRow(placement="dp", compression=compression, sites=tuple(sites), cuts=(), links=(), step_s=step_s,
                 predicted_step_s=predicted, targets=targets(config, evals), sends=f"gradients {sends}",
                 slow_link_bytes_per_step=sent / max(len(sites) - 1, 1) / config.steps,
                 final_accuracy=evals[-1].accuracy if evals else None, final_loss=steps[-1].loss,
                 final_test_loss=evals[-1].loss if evals else None, train_wall_s=times[-1] if times else None,
                 wan_bytes_per_step=sent * len(sites) / config.steps, slow_link_ratio=ratio, mean_ratios=(),
                 wall_s=wall, reduce_s=0.0, samples_per_step=len(sites) * dp_batch(config) * config.microbatches,
                 wan_link_bytes=wan_link_bytes, loss_curve=loss, accuracy_curve=accuracy, test_loss_curve=test_loss)


__all__ = ["dp_batch", "run_dp"]
