"""Planning for ``innet geo bench``: measure the workload (and each site's device speed) and
plan every placement from it, before any run starts.

Every run of one benchmark trains on these plans, so the runs differ only in placement and
compression, never in what was measured when planning.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from innet.host.geo.estimator import OpWorkload, measure
from innet.host.geo.graph import Graph
from innet.host.geo.launch import SINGLE_THREAD_BLAS
from innet.host.geo.opfence import Plan, SiteNetwork, cluster, exhaustive, greedy, naive, opfence, predict
from innet.host.geo.stage_process import build_model, build_task
from innet.testbed.geo.config import GeoBenchConfig, GeoBenchError
from innet.testbed.geo.topology import network_view


@dataclass(frozen=True)
class Planned:
    """The measured workload and every placement's plan, shared by all runs of a benchmark."""

    graph: Graph
    workload: OpWorkload
    network: SiteNetwork
    clusters: tuple[tuple[str, ...], ...]
    plans: dict[str, Plan]
    site_speeds: dict[str, float] = field(default_factory=dict)
    """Measured speed per site relative to the planning process (empty: not measured)."""
    probe_s: dict[str, float] = field(default_factory=dict)
    """Seconds per probe operator: ``reference`` and each site."""


def _probe_process(spawn: Callable[[], subprocess.Popen[bytes]], what: str, timeout: float) -> float:
    popen = spawn()
    try:
        out, err = popen.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait(5.0)
        raise GeoBenchError(f"geo bench: the speed probe of {what} did not finish in {timeout:g} s") from None
    for line in out.decode(errors="replace").splitlines():
        if line.startswith("{"):
            return float(json.loads(line)["probe_s"])
    raise GeoBenchError(f"geo bench: the speed probe of {what} printed nothing "
                        f"(status {popen.returncode}): {err.decode(errors='replace')[-300:]}")


def _reference_probe(duration: float) -> float:
    """The probe in this process (where the workload was measured), one BLAS thread."""
    from threadpoolctl import threadpool_limits

    from innet.host.geo.speed import probe

    with threadpool_limits(1):
        return probe(duration)[0]


def measure_speeds(config: GeoBenchConfig, quotas: Any, fabric: Any = None) -> tuple[dict[str, float], dict[str, float]]:
    """Each site's speed: the probe operator timed in a process placed like the site's stages
    (its quota; on Mininet its first host), against the same probe in this process, where the
    workload was measured (speed 1.0 is that process's speed), timed before and after the sites
    and averaged (the machine's load drifts)."""
    import sys

    from innet.host.geo.speed import relative_speeds
    from innet.testbed.geo.topology import sites_of

    argv = [sys.executable, "-m", "innet.host.geo.speed", str(config.probe_s)]
    env = {**os.environ, **SINGLE_THREAD_BLAS}
    timeout = 30 + 20 * config.probe_s
    before = _reference_probe(config.probe_s)
    times: dict[str, float] = {}
    for site in sites_of(config.topology):
        def spawn(site: str = site) -> subprocess.Popen[bytes]:
            popen: subprocess.Popen[bytes]
            if fabric is not None and fabric.kind == "mininet":
                popen = fabric.spawn_stage(fabric.stage_host(site, 0), argv, SINGLE_THREAD_BLAS, f"speed probe {site}")
            else:
                popen = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            quotas.add(site, popen.pid)
            return popen
        times[site] = _probe_process(spawn, f"site {site}", timeout)
    reference = (before + _reference_probe(config.probe_s)) / 2
    return relative_speeds(reference, times), {"reference": reference, **times}


def plan_all(config: GeoBenchConfig, quotas: Any = None, fabric: Any = None) -> Planned:
    """Measure the workload at the microbatch size (and, with ``speeds``, every site's device
    speed under its quota) and plan every placement with the measured speeds."""
    graph = build_model(config.model_spec())
    task = build_task(config.task_spec(), config.task_seed)
    feeds = next(task.batches(config.batch, 1, config.seed))[0]
    workload = measure(graph, graph.init_params(config.seed), feeds, repeats=7)
    speeds: dict[str, float] = {}
    probes: dict[str, float] = {}
    if config.speeds:
        own = quotas is None
        quotas = quotas if quotas is not None else site_quotas(config)
        try:
            speeds, probes = measure_speeds(config, quotas, fabric)
        finally:
            if own:
                quotas.close()
    device_speed = {h.name: speeds[h.group] for h in config.topology.workers if h.group in speeds}
    equal = network_view(config.topology)
    net = replace(equal, speed=device_speed) if device_speed else equal
    clusters = tuple(cluster(net))
    sites = tuple(tuple(h.name for h in config.topology.workers if h.group == s)
                  for s in dict.fromkeys(h.group for h in config.topology.workers))
    m = config.microbatches
    plans = {"naive": naive(graph, workload, net, clusters, m), "greedy": greedy(graph, workload, net, sites, m),
             "search": exhaustive(graph, workload, net, sites, m), "opfence": opfence(graph, workload, net, clusters, m)}
    if device_speed:  # the plan made as if all sites were equally fast, scored at the measured speeds
        blind = opfence(graph, workload, equal, clusters, m)
        plans["uniform"] = predict(graph, workload, net, blind.order, blind.cuts, m)
    return Planned(graph, workload, net, clusters, plans, speeds, probes)


def site_quotas(config: GeoBenchConfig) -> Any:
    """The sites' CPU quotas (cgroups) as ``speeds`` gives them; unnamed sites get no limit."""
    from innet.testbed.geo.cpuquota import CpuQuotaError, CpuQuotas
    from innet.testbed.geo.topology import sites_of

    try:
        quotas = CpuQuotas()
    except CpuQuotaError as error:
        raise GeoBenchError(f"geo bench --speeds: {error}") from None
    try:
        given = dict(config.speeds)
        for site in sites_of(config.topology):
            quotas.set(site, given.get(site))
    except CpuQuotaError as error:
        quotas.close()
        raise GeoBenchError(f"geo bench --speeds: {error}") from None
    except BaseException:
        quotas.close()
        raise
    return quotas


__all__ = ["Planned", "measure_speeds", "plan_all", "site_quotas"]


@dataclass(frozen=True)
class TwoTier:
    """A two-bandwidth-tier network to plan on: ``sites`` sites in ``groups`` equal groups,
    fast links inside a group and slow links between (:func:`~innet.host.geo.plansearch.two_tier`)."""

    sites: int
    groups: int

    def __post_init__(self) -> None:
        if self.groups < 1 or self.sites < 2 or self.sites % self.groups:
            raise GeoBenchError(f"two-tier network {self.sites}:{self.groups}: needs at least 2 sites in equal "
                                f"groups ({self.sites} sites cannot form {self.groups} equal groups)")

    def __str__(self) -> str:
        return f"{self.sites} sites in {self.groups} groups"


@dataclass(frozen=True)
class TierComparison:
    """OP-Fence, unclustered search and greedy planned on one :class:`TwoTier` network."""

    network: TwoTier
    links: SiteNetwork
    comparison: Any
    """A :class:`~innet.host.geo.plansearch.PlannerComparison`."""


def compare_tiers(planned: Planned, networks: tuple[TwoTier, ...], microbatches: int,
                  clock: Callable[[], float] | None = None) -> tuple[TierComparison, ...]:
    """Plan the measured workload three ways on each two-tier network. Why here: the 3-site
    topology's clusters are its sites, so only a bigger network shows what clustering changes."""
    from innet.host.geo.plansearch import compare, two_tier

    out = []
    for n in networks:
        net = two_tier(n.sites, n.groups)
        out.append(TierComparison(n, net, compare(planned.graph, planned.workload, net, microbatches,
                                                  clock=clock or time.perf_counter)))
    return tuple(out)


def tiers_table(results: tuple[TierComparison, ...]) -> str:
    """One block per network: each planner's stages, chain, predicted step and planning time,
    and its predicted step relative to OP-Fence's."""
    lines = []
    for r in results:
        c = r.comparison
        bw = sorted(set(r.links.bw_mbps.values()))
        lines.append(f"two-tier network, {r.network}, links {bw[0]:.3g}-{bw[-1]:.4g} Mbit/s (slow between groups): "
                     f"clusters {'; '.join(','.join(g) for g in c.clusters)}")
        lines.append(f"  {'planner':8} {'stages':>6} {'predicted ms':>12} {'x opfence':>9} {'planning s':>10}  chain")
        base = c.opfence.plan.step_s
        for name, timed in (("opfence", c.opfence), ("search", c.search), ("greedy", c.greedy)):
            plan = timed.plan
            chain = " > ".join("+".join(g) for g in plan.order)
            lines.append(f"  {name:8} {len(plan.order):6d} {plan.step_s * 1e3:12.1f} {plan.step_s / base:9.2f} "
                         f"{timed.planning_s:10.3f}  {chain}")
    return "\n".join(lines)
