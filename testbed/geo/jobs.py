"""The stage processes of one pipeline run: what each stage is told, and where it starts.

A stage job carries everything its process needs (model, task, cuts, links, codecs), so the
same plan trains the same way on loopback (local processes, the WAN in the transport) and on
Mininet (processes on the site hosts, the WAN on the veths).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable, Sequence

from innet.host.geo.channel import LinkShape
from innet.host.geo.launch import SINGLE_THREAD_BLAS, Spawn, local_spawn
from innet.host.geo.opfence import Plan
from innet.host.geo.specs import DpSpec
from innet.host.geo.stage_process import StageJob, build_model
from innet.host.geo.stages import partition
from innet.testbed.core.topology import Topology
from innet.testbed.geo.config import GeoBenchConfig, GeoBenchError, link_compression
from innet.testbed.geo.cpuquota import CpuQuotas
from innet.testbed.geo.plan import Planned
from innet.testbed.geo.testbed import GeoTestbed
from innet.testbed.geo.topology import wan_shape


def site_of(topo: Topology, device: str) -> str:
    """The site (host group) of a device."""
    group = topo.host(device).group
    assert group is not None
    return group


def plan_sites(config: GeoBenchConfig, plan: Plan) -> list[str]:
    """The site of each stage of ``plan``, in pipeline order."""
    return [site_of(config.topology, c[0]) for c in plan.order]


def stage_jobs(config: GeoBenchConfig, plan: Plan, compression: str, replica: int,
               dp: Callable[[int, str], DpSpec | None] | None = None, fabric: GeoTestbed | None = None,
               skip_steps: int = 0, params_dir: Path | None = None,
               params_in: Sequence[str] = (), stop_file: Path | None = None) -> list[StageJob]:
    """The stage jobs of pipeline ``replica`` for ``plan``; compression on the slowest links only.
    ``fabric`` (a geo testbed) places each stage on a host and says what the transport still
    emulates of each WAN link; without it, stages are local processes shaping the whole link."""
    topo = config.topology
    sites = plan_sites(config, plan)
    slowest = min(link.bw_mbps for link in plan.links) if plan.links else None
    link_config = link_compression(config, compression)
    comp = [link_config if link.bw_mbps == slowest else None for link in plan.links]
    numpy_nodes: list[str] = []
    if config.numpy_stages:
        stages = partition(build_model(config.model_spec()), plan.cuts)
        for i in config.numpy_stages:
            if not 0 <= i < len(stages):
                raise GeoBenchError(f"geo bench: numpy stage {i}: the plan has {len(stages)} stages")
            numpy_nodes += stages[i].nodes

    def shape(a: str, b: str) -> LinkShape | None:
        return fabric.transport_shape(a, b) if fabric is not None else wan_shape(topo, a, b)

    jobs = []
    for i in range(len(sites)):
        host = fabric.stage_host(sites[i], replica) if fabric is not None else None
        listen = (topo.host(host).address, 0) if host is not None else ("127.0.0.1", 0)
        jobs.append(StageJob(model=config.model_spec(numpy_nodes), task=config.task_spec(), cuts=plan.cuts, index=i,
                             steps=config.steps, batch=config.batch, microbatches=config.microbatches,
                             seed=config.seed, task_seed=config.task_seed, data_seed=config.seed + 1000 * replica,
                             skip_steps=skip_steps, lr=config.lr,
                             momentum=config.momentum, listen=listen,
                             shape_next=shape(sites[i], sites[i + 1]) if i + 1 < len(sites) else None,
                             shape_prev=shape(sites[i], sites[i - 1]) if i > 0 else None,
                             compress_next=comp[i] if i < len(comp) else None,
                             compress_prev=comp[i - 1] if i > 0 else None,
                             eval_every=config.eval_every, dp=dp(i, sites[i]) if dp else None,
                             params_out=str(params_dir / f"r{replica}s{i}.npz") if params_dir else None,
                             params_in=tuple(params_in), stop_file=str(stop_file) if stop_file else None,
                             timeout=min(config.timeout_s, 300.0)))
    return jobs


def stage_spawner(config: GeoBenchConfig, fabric: GeoTestbed | None) -> Spawn:
    """How ``launch`` starts a stage: locally, or on the testbed host whose address it listens on."""
    if fabric is None or fabric.kind != "mininet":
        return local_spawn
    tb = fabric
    hosts = {h.address: h.name for h in config.topology.workers}

    def spawn(job: StageJob, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        return tb.spawn_stage(hosts[job.listen[0]], argv, SINGLE_THREAD_BLAS, name)

    return spawn


def stage_elements(planned: Planned, plan: Plan, i: int) -> int:
    """Parameters of stage ``i`` (the size of the gradient its site's switch sums)."""
    names = set(plan.stage_nodes[i])
    return sum(c.param_bytes // 4 for c in planned.workload.costs if c.name in names)


def quota_spawner(spawn: Spawn, quotas: CpuQuotas, sites: Sequence[str]) -> Spawn:
    """``spawn``, then the stage process moved into its site's CPU quota."""
    def placed(job: StageJob, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        popen = spawn(job, name, argv)
        quotas.add(sites[job.index], popen.pid)
        return popen

    return placed


__all__ = ["plan_sites", "quota_spawner", "site_of", "stage_elements", "stage_jobs", "stage_spawner"]
