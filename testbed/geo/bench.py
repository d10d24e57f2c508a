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
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from innet.host.geo.compress import CompressionConfig
from innet.host.geo.estimator import OpWorkload, measure
from innet.host.geo.graph import Graph
from innet.host.geo.launch import SINGLE_THREAD_BLAS, Spawn, launch, local_spawn
from innet.host.geo.opfence import SiteNetwork, Plan, cluster, exhaustive, greedy, naive, opfence, predict
from innet.host.geo.stage_process import StageJob, build_model, build_task
from innet.host.geo.stages import partition
from innet.host.geo.straggler import StragglerConfig, StragglerDetector, StragglerError
from innet.testbed.geo.topology import geo, network_view, wan_shape
from innet.testbed.core.topology import Topology
from innet.testbed.core.machine import describe as machine

PLACEMENTS = ("naive", "greedy", "search", "opfence", "uniform", "dp")
"""Pipeline placements (naive order, bandwidth-greedy, exhaustive search without clustering,
OP-Fence; ``uniform``: OP-Fence's plan made as if every site were equally fast, for runs with
``speeds``) and ``dp``: data parallel across sites, every site a full replica."""
COMPRESSIONS = ("none", "int8", "topk", "adatopk")
"""What the compressed links send: dense, int8 per row, top-k at ``topk_ratio``, or AdaTopK's
top-k at the ratio the link's measured bandwidth allows (floored at ``min_ratio``)."""
DEFAULT_RUNS = (("dp", "none"), ("dp", "int8"), ("dp", "topk"), ("naive", "none"), ("greedy", "none"),
                ("search", "none"), ("opfence", "none"), ("opfence", "int8"), ("opfence", "topk"),
                ("opfence", "adatopk"))
DEFAULT_TARGET_LOSS = {"lm": 1.0, "digits": 0.3}
"""Time-to-loss target (test cross-entropy, nats) when none is given: the language model's Bayes
loss is 0.83, dense reaches ~0.86 in 150 steps."""
REFERENCE = ("opfence", "adatopk")
"""The run whose speedup against every other run the benchmark reports."""


class GeoBenchError(ValueError):
    """Bad benchmark settings; names the setting and value."""


@dataclass(frozen=True)
class GeoBenchConfig:
    """What ``innet geo bench`` runs."""

    task: str = "digits"
    """``digits`` (MLP ``sizes``) or ``lm`` (toy GPT-2 on the synthetic bigram task)."""
    sizes: tuple[int, ...] = (64, 128, 256, 32, 10)
    """MLP widths for ``digits``."""
    batch: int = 32
    """Samples per microbatch."""
    microbatches: int = 4
    steps: int = 100
    lr: float = 0.05
    momentum: float = 0.9
    eval_every: int = 5
    target_accuracy: float = 0.9
    """Time-to-accuracy threshold (test set)."""
    topk_ratio: float = 0.25
    """Fixed top-k ratio (per row: 8 of 32 elements on the language model)."""
    min_ratio: float = 0.25
    """AdaTopK's floor: below it the language model's loss moves away from dense (docs/geo.md)."""
    target_loss: float | None = None
    """Time-to-loss threshold (test cross-entropy), or None."""
    layers: int = 2
    """GPT blocks (``lm``)."""
    width: int = 32
    """GPT width (``lm``)."""
    heads: int = 2
    vocab: int = 32
    """Tokens of the synthetic language (``lm``)."""
    seq: int = 16
    """Tokens per sequence (``lm``)."""
    torch_model: str | None = None
    """Run a PyTorch model traced with torch.fx instead of the numpy one: ``mlp`` / ``gpt`` (the
    shipped ones with this config's sizes) or ``package.module:factory`` (called without arguments;
    returns an ``nn.Module`` whose forward gives the logits)."""
    numpy_stages: tuple[int, ...] = ()
    """With ``torch_model``: pipeline stages that run the numpy operators instead (heterogeneous software)."""
    row_topk: bool = True
    """AdaTopK / top-k on activations per row (token) rather than per tensor (the language-model
    stall, docs/geo.md)."""
    warmup_steps: int = 10
    """Top-k links send int8 per row for the first N steps (top-k from random weights can stall)."""
    activations: str = "topk"
    """How top-k runs send activations (``CompressionConfig.activations``): ``topk``, or ``int8-fit``
    (int8 per row where that fits top-k's bytes, else top-k)."""
    gradients: str = "masked"
    """How top-k runs send gradients (``CompressionConfig.gradients``): ``masked`` (at the forward
    top-k's columns, no indices), ``topk`` at the ratio or ``int8`` per row, both with error feedback."""
    topk_values: str = "int8"
    """Top-k values as ``int8`` (with a scale per row) or ``fp32``."""
    reference: bool = True
    """Language model: sparsify each token's deviation from a reference row per token that both
    ends of a link keep (``CompressionConfig.reference="key"``)."""
    runs: tuple[tuple[str, str], ...] = DEFAULT_RUNS
    replicas: int = 1
    """Pipelines per site (> 1: data parallel inside each site through its innet switch)."""
    topology: Topology = field(default_factory=geo)
    testbed: str = "loopback"
    """``loopback`` (stages as local processes, WAN in the transport) or ``mininet`` (root:
    stages on the site hosts, switches per site, WAN veths; see innet.testbed.geo.mininet)."""
    switch_impl: str = "innet"
    """The site switches: ``innet`` (innet-switch) or ``bmv2`` (simple_switch_grpc; Mininet only)."""
    speeds: tuple[tuple[str, float], ...] = ()
    """CPU share of one core per site (a cgroup quota on the site's processes; root): emulated
    heterogeneous devices. Sites not named are not limited. Each site's speed is then measured
    (innet.host.geo.speed) and OP-Fence plans with it."""
    straggler: tuple[str, int, float] | None = None
    """(site, step, share): tighten that site's quota to ``share`` when the last stage finishes
    ``step`` (a device that slows mid-run)."""
    straggler_threshold: float = 1.5
    """Online detection: a stage whose median compute over the last ``straggler_window`` steps
    exceeds this factor of its own first window's is reported as a straggler (site and step)."""
    straggler_window: int = 5
    rate_change: tuple[str, str, int, float] | None = None
    """(site, site, step, Mbit/s): set the WAN link between the two sites to that rate when the
    last stage finishes ``step`` (Mininet: tc on the link; AdaTopK's ratio should follow)."""
    replan: bool = False
    """With ``straggler``: re-plan once, when the slowdown is detected online (stop, plan with
    the measured speed, continue from the stages' parameters)."""
    probe_s: float = 0.6
    """Seconds each site's speed probe runs (several quota periods)."""
    seed: int = 0
    out_dir: Path = Path("results")
    timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.task not in ("digits", "lm"):
            raise GeoBenchError(f"geo bench task {self.task!r}: expected 'digits' or 'lm'")
        for placement, comp in self.runs:
            if placement not in PLACEMENTS or comp not in COMPRESSIONS:
                raise GeoBenchError(f"geo bench run {placement}/{comp}: placement must be one of "
                                    f"{', '.join(PLACEMENTS)} and compression one of {', '.join(COMPRESSIONS)}")
        if any(p == "dp" and c == "adatopk" for p, c in self.runs):
            raise GeoBenchError("geo bench run dp/adatopk: data parallel takes none, int8 or topk")
        if self.testbed not in ("loopback", "mininet"):
            raise GeoBenchError(f"geo bench testbed {self.testbed!r}: expected 'loopback' or 'mininet'")
        if self.switch_impl not in ("innet", "bmv2"):
            raise GeoBenchError(f"geo bench switch_impl {self.switch_impl!r}: expected 'innet' or 'bmv2'")
        if self.switch_impl == "bmv2" and self.testbed != "mininet":
            raise GeoBenchError("geo bench --switch-impl bmv2: BMv2 has no UDP ports, so its site switches run in "
                                "Mininet: add --backend mininet (as root)")
        if self.replicas < 1 or self.steps < 1 or self.microbatches < 1 or self.batch < 1:
            raise GeoBenchError("geo bench: replicas, steps, microbatches and batch must be >= 1")
        from innet.host.geo.compress import CompressionError

        try:
            link_compression(self, "topk")
            StragglerConfig(self.straggler_threshold, self.straggler_window)
        except (CompressionError, StragglerError) as error:
            raise GeoBenchError(f"geo bench: {error}") from None
        if self.width % self.heads:
            raise GeoBenchError(f"geo bench: width {self.width} is not a multiple of heads {self.heads}")
        if min(self.layers, self.width, self.vocab, self.seq) < 1 or self.vocab < 2:
            raise GeoBenchError("geo bench: layers, width, seq must be >= 1 and vocab >= 2")
        if self.numpy_stages and self.torch_model is None:
            raise GeoBenchError("geo bench: numpy stages only apply to a torch model (--torch)")
        if self.torch_model is not None and any(p == "dp" for p, _ in self.runs):
            raise GeoBenchError("geo bench run dp/...: data parallel runs the numpy models only; drop it with --torch")
        self._check_speeds()

    def _check_speeds(self) -> None:
        from innet.host.geo.speed import SpeedError, check_speeds
        from innet.testbed.geo.topology import sites_of

        sites = sites_of(self.topology)
        named = [s for s, _ in self.speeds] + ([self.straggler[0]] if self.straggler else [])
        values = [v for _, v in self.speeds] + ([self.straggler[2]] if self.straggler else [])
        try:
            for site, value in zip(named, values):
                check_speeds({site: value}, sites)
        except SpeedError as error:
            raise GeoBenchError(f"geo bench: {error}") from None
        low = [(s, v) for s, v in zip(named, values) if v < 0.001]
        if low:
            raise GeoBenchError(f"geo bench: CPU share {low[0][1]:g} of site {low[0][0]!r}: at least 0.001 of a CPU")
        if self.straggler is not None and not 0 <= self.straggler[1] < self.steps:
            raise GeoBenchError(f"geo bench: straggler step {self.straggler[1]}: must be within 0..{self.steps - 1}")
        room = 3 + 2 * self.straggler_window + STOP_AHEAD
        if self.replan and (self.straggler is None or self.straggler[1] + room >= self.steps - 1):
            raise GeoBenchError(f"geo bench --replan: needs --straggler SITE:STEP:SHARE with STEP + {room + 1} < --steps "
                                "(warm-up, two detection windows and the stop before the re-plan)")
        if self.rate_change is not None:
            a, b, at, mbps = self.rate_change
            if self.testbed != "mininet":
                raise GeoBenchError("geo bench --rate-change: changes a Mininet WAN link with tc: "
                                    "add --backend mininet (root)")
            if not 0 <= at < self.steps:
                raise GeoBenchError(f"geo bench: rate change step {at}: must be within 0..{self.steps - 1}")
            missing = [x for x in (a, b) if x not in sites]
            if missing:
                raise GeoBenchError(f"geo bench: rate change: no site {missing[0]!r} (sites: {', '.join(sites)})")
        if any(p == "uniform" for p, _ in self.runs) and not self.speeds:
            raise GeoBenchError("geo bench run uniform/...: the equal-speed plan only differs with --speeds")

    def model_spec(self, numpy_nodes: Sequence[str] = ()) -> dict[str, Any]:
        gpt = {"vocab": self.vocab, "d": self.width, "heads": self.heads, "layers": self.layers, "seq": self.seq}
        if self.torch_model is not None:
            builtin = {"mlp": ("innet.host.geo.torch_models:mlp", {"sizes": list(self.sizes)}),
                       "gpt": ("innet.host.geo.torch_models:gpt", gpt)}
            factory, kwargs = builtin.get(self.torch_model, (self.torch_model, {}))
            return {"kind": "torch", "factory": factory, "kwargs": kwargs, "seed": self.seed,
                    "target": "y" if self.task == "digits" else "targets", "numpy_nodes": list(numpy_nodes)}
        if self.task == "digits":
            return {"kind": "mlp", "sizes": list(self.sizes)}
        return {"kind": "gpt", **gpt}

    def task_spec(self) -> dict[str, Any]:
        return {"kind": "digits"} if self.task == "digits" else {"kind": "lm", "vocab": self.vocab, "seq": self.seq}


@dataclass(frozen=True)
class Planned:
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
    task = build_task(config.task_spec(), config.seed)
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


def link_compression(config: GeoBenchConfig, compression: str) -> CompressionConfig | None:
    """What a compressed link of run ``compression`` sends (None: dense)."""
    if compression == "none":
        return None
    if compression == "int8":
        return CompressionConfig("int8")
    return CompressionConfig(compression, ratio=config.topk_ratio, min_ratio=config.min_ratio,
                             row_topk=config.row_topk, warmup_steps=config.warmup_steps, warmup="int8",
                             activations=config.activations, gradients=config.gradients,
                             values=config.topk_values,
                             reference="key" if config.reference and config.task == "lm" else "none",
                             reference_rate=0.9)


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


def _site(topo: Topology, device: str) -> str:
    group = topo.host(device).group
    assert group is not None
    return group


def stage_jobs(config: GeoBenchConfig, plan: Plan, compression: str, replica: int,
               dp: Callable[[int, str], dict[str, Any] | None] | None = None, fabric: Any = None,
               skip_steps: int = 0, params_dir: Path | None = None,
               params_in: Sequence[str] = (), stop_file: Path | None = None) -> list[StageJob]:
    """The stage jobs of pipeline ``replica`` for ``plan``; compression on the slowest links only.
    ``fabric`` (a geo testbed) places each stage on a host and says what the transport still
    emulates of each WAN link; without it, stages are local processes shaping the whole link."""
    topo = config.topology
    sites = [_site(topo, c[0]) for c in plan.order]
    slowest = min(link.bw_mbps for link in plan.links) if plan.links else None
    comp: list[dict[str, Any] | None] = []
    link_config = link_compression(config, compression)
    for link in plan.links:
        comp.append(asdict(link_config) if link_config is not None and link.bw_mbps == slowest else None)
    numpy_nodes: list[str] = []
    if config.numpy_stages:
        stages = partition(build_model(config.model_spec()), plan.cuts)
        for i in config.numpy_stages:
            if not 0 <= i < len(stages):
                raise GeoBenchError(f"geo bench: numpy stage {i}: the plan has {len(stages)} stages")
            numpy_nodes += stages[i].nodes

    def shape(a: str, b: str) -> dict[str, Any] | None:
        s = fabric.transport_shape(a, b) if fabric is not None else wan_shape(topo, a, b)
        return asdict(s) if s is not None else None

    jobs = []
    for i in range(len(sites)):
        host = fabric.stage_host(sites[i], replica) if fabric is not None else None
        listen = (topo.host(host).address, 0) if host is not None else ("127.0.0.1", 0)
        jobs.append(StageJob(model=config.model_spec(numpy_nodes), task=config.task_spec(), cuts=plan.cuts, index=i,
                             steps=config.steps, batch=config.batch, microbatches=config.microbatches,
                             seed=config.seed, data_seed=config.seed + 1000 * replica, skip_steps=skip_steps, lr=config.lr,
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


def stage_spawner(config: GeoBenchConfig, fabric: Any) -> Spawn:
    """How ``launch`` starts a stage: locally, or on the testbed host whose address it listens on."""
    if fabric is None or fabric.kind != "mininet":
        return local_spawn
    hosts = {h.address: h.name for h in config.topology.workers}

    def spawn(job: StageJob, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        popen: subprocess.Popen[bytes] = fabric.spawn_stage(hosts[job.listen[0]], argv, SINGLE_THREAD_BLAS, name)
        return popen

    return spawn


def _stage_elements(planned: Planned, plan: Plan, i: int) -> int:
    names = set(plan.stage_nodes[i])
    return sum(c.param_bytes // 4 for c in planned.workload.costs if c.name in names)


def _dp_processes(config: GeoBenchConfig, sites: Sequence[str], ratio: float, codec: str, geo_tb: Any,
                  quotas: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float, int, dict[str, int] | None]:
    """Data parallel with one process per site (:mod:`innet.host.geo.dp_process`): on Mininet on
    the site's first host, gradients over the WAN veths; on loopback local processes with the
    transport's shaper. Site 0's step and eval records, wall time, its bytes sent, WAN bytes."""
    from innet.host.geo.dp_process import DpJob, launch_dp

    topo = config.topology
    mininet = geo_tb is not None and geo_tb.kind == "mininet"
    jobs = []
    for i, site in enumerate(sites):
        host = geo_tb.stage_host(site, 0) if mininet else None
        shapes = tuple(None if j == i or mininet else asdict(wan_shape(topo, site, other))
                       for j, other in enumerate(sites))
        jobs.append(DpJob(model=config.model_spec(), task=config.task_spec(), index=i, sites=len(sites),
                          steps=config.steps, batch=config.batch, microbatches=config.microbatches, seed=config.seed,
                          data_seed=config.seed + 1000 * i, lr=config.lr, momentum=config.momentum, ratio=ratio,
                          codec=codec, listen=(topo.host(host).address, 0) if host is not None else ("127.0.0.1", 0),
                          shapes=shapes, eval_every=config.eval_every, timeout=min(config.timeout_s, 300.0)))
    hosts = {h.address: h.name for h in topo.workers}

    def spawn(job: Any, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        popen: subprocess.Popen[bytes]
        if mininet:
            popen = geo_tb.spawn_stage(hosts[job.listen[0]], argv, SINGLE_THREAD_BLAS, name)
        else:
            popen = local_spawn(job, name, argv)
        if quotas is not None:
            quotas.add(sites[job.index], popen.pid)
        return popen

    wan_before = geo_tb.wan_bytes() if mininet else None
    start = time.monotonic()
    outputs = launch_dp(jobs, spawn, timeout=config.timeout_s)
    wall = time.monotonic() - start
    wan = _wan_delta(wan_before, geo_tb.wan_bytes()) if wan_before is not None else None
    return outputs[0].of("step"), outputs[0].of("eval"), wall, int(outputs[0].of("done")[0]["sent"]), wan


def run_dp(config: GeoBenchConfig, planned: Planned, compression: str, geo_tb: Any = None,
           quotas: Any = None) -> dict[str, Any]:
    """Baseline (a): every site a full replica as its own process (on the site's host on
    Mininet), gradients averaged over the WAN: dense, int8, or top-k at ``topk_ratio``, both with
    error feedback."""
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
    times = [r["t"] for r in steps]
    deltas = np.diff([0.0, *times])
    warm = min(3, len(deltas) - 1)
    sends = {"none": "dense", "int8": "int8 per 256", "topk": f"top-k r={ratio:.2f}"}[compression]
    return {"placement": "dp", "compression": compression, "sends": f"gradients {sends}", "sites": sites,
            "cuts": [], "links": [], "step_s": float(statistics.median(deltas[warm:])), "predicted_step_s": predicted,
            **_targets(config, evals), "final_accuracy": evals[-1]["accuracy"] if evals else None,
            "final_loss": steps[-1]["loss"], "final_test_loss": evals[-1]["loss"] if evals else None,
            "train_wall_s": times[-1] if times else None,
            "wan_bytes_per_step": sent * len(sites) / config.steps,
            "slow_link_bytes_per_step": sent / max(len(sites) - 1, 1) / config.steps,
            "slow_link_ratio": ratio, "mean_ratios": [],
            "wall_s": wall, "reduce_s": 0.0, "wan_link_bytes": wan_link_bytes, "dp_sites_as": "processes",
            "samples_per_step": len(sites) * config.batch * config.microbatches,
            "loss_curve": [[r["t"], r["loss"]] for r in steps],
            "accuracy_curve": [[e["t"], e["step"], e["accuracy"]] for e in evals],
            "test_loss_curve": [[e["t"], e["step"], e["loss"]] for e in evals]}


def target_loss(config: GeoBenchConfig) -> float:
    return config.target_loss if config.target_loss is not None else DEFAULT_TARGET_LOSS[config.task]


def _targets(config: GeoBenchConfig, evals: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Training time to the target test accuracy and to the target test loss (None: not reached)."""
    goal = target_loss(config)
    return {"time_to_accuracy_s": next((e["t"] for e in evals if e["accuracy"] >= config.target_accuracy), None),
            "time_to_loss_s": next((e["t"] for e in evals if e["loss"] <= goal), None), "target_loss": goal}


def _quota_spawner(spawn: Spawn, quotas: Any, sites: Sequence[str]) -> Spawn:
    """``spawn``, then the stage process moved into its site's CPU quota."""
    def placed(job: StageJob, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        popen = spawn(job, name, argv)
        quotas.add(sites[job.index], popen.pid)
        return popen

    return placed


def straggler_effect(config: GeoBenchConfig, planned: Planned, plan: Plan, outputs: Any,
                     step_deltas: Sequence[float]) -> dict[str, Any]:
    """What the mid-run slowdown did: median step time and the straggler's stage compute per
    step before and after, the speed that implies, and the plan OP-Fence would make with it
    (computed after the run; the run itself keeps its plan)."""
    assert config.straggler is not None
    site, at, share = config.straggler
    sites = [_site(config.topology, c[0]) for c in plan.order]
    stage = sites.index(site)
    compute = [r["s"] for r in outputs[0][stage].of("compute")]
    warm = min(3, at)
    before_c, after_c = compute[warm:at + 1], compute[at + 2:]
    before_s, after_s = list(step_deltas[warm:at + 1]), list(step_deltas[at + 2:])
    out: dict[str, Any] = {"site": site, "step": at, "share": share, "stage": stage,
                           "step_before_s": statistics.median(before_s) if before_s else None,
                           "step_after_s": statistics.median(after_s) if after_s else None,
                           "compute_before_s": statistics.median(before_c) if before_c else None,
                           "compute_after_s": statistics.median(after_c) if after_c else None}
    if before_c and after_c:
        old = planned.site_speeds.get(site, 1.0)
        new = old * out["compute_before_s"] / out["compute_after_s"]
        out["speed_before"], out["speed_after"] = old, new
        speed = dict(planned.network.speed or {})
        for h in config.topology.workers:
            if h.group == site:
                speed[h.name] = new
        net = replace(planned.network, speed=speed)
        m = config.microbatches
        replan = opfence(planned.graph, planned.workload, net, planned.clusters, m)
        kept = predict(planned.graph, planned.workload, net, plan.order, plan.cuts, m)
        out["replan"] = {"sites": [_site(config.topology, c[0]) for c in replan.order], "cuts": list(replan.cuts),
                         "predicted_step_s": replan.step_s, "kept_plan_predicted_step_s": kept.step_s}
    return out


def run_replanned(config: GeoBenchConfig, planned: Planned, placement: str, compression: str,
                  geo_tb: Any = None, quotas: Any = None) -> dict[str, Any]:
    """A straggler, found online, then a re-plan at a step boundary: train until the detector
    (``straggler_threshold`` / ``straggler_window``) names a stage whose compute rose, stop the
    pipeline ``STOP_AHEAD`` steps later, take that site's new speed from the detector's windows,
    plan again with OP-Fence and continue the same training on the new plan (each stage starts
    from the parameters and momentum the old stages wrote; the batches continue in the same
    order). Nothing says where or when: ``straggler`` only slows a site's CPU quota. Stops and
    restarts the stage processes: the re-plan's cost is in the row (``replan_pause_s``). No
    detection: the run is the plain run, with ``replan`` None."""
    import tempfile

    assert config.straggler is not None and quotas is not None
    slowed, _, share = config.straggler
    with tempfile.TemporaryDirectory(prefix="innet-geo-replan-") as tmp:
        stop = Path(tmp) / "stop"
        a = run_one(replace(config, replan=False), planned, placement, compression, geo_tb, quotas, Path(tmp),
                    stop_file=stop)
        found = a["stragglers_detected"]
        if not found or a["steps_done"] >= config.steps:
            return {**a, "replan": None}
        first = a["steps_done"]
        site = found[0]["site"]
        speed_after = planned.site_speeds.get(site, 1.0) * found[0]["baseline_s"] / found[0]["recent_s"]
        effect = {"step_after_s": a["straggler"]["step_after_s"] if a.get("straggler") else None}
        speed = dict(planned.network.speed or {})
        speed.update({h.name: speed_after for h in config.topology.workers if h.group == site})
        net = replace(planned.network, speed=speed)
        new = opfence(planned.graph, planned.workload, net, planned.clusters, config.microbatches)
        later = replace(planned, network=net, plans={**planned.plans, placement: new})
        files = sorted(str(f) for f in Path(tmp).glob("*.npz"))
        quotas.set(slowed, share)  # the device stays slow
        try:
            b = run_one(replace(config, steps=config.steps - first, straggler=None, replan=False), later, placement,
                        compression, geo_tb, quotas, params_in=files, skip_steps=first)
        finally:
            quotas.set(slowed, dict(config.speeds).get(slowed))
    offset = a["train_wall_s"] or 0.0
    row = dict(a)
    row.update({
        "replan": {"sites_before": a["sites"], "cuts_before": a["cuts"], "sites_after": b["sites"],
                   "cuts_after": b["cuts"], "at_step": first, "speed_after": speed_after,
                   "detected": found[0], "site": site,
                   "step_after_straggler_s": effect["step_after_s"], "step_after_replan_s": b["step_s"],
                   "predicted_after_replan_s": b["predicted_step_s"],
                   "replan_pause_s": b["wall_s"] - (b["train_wall_s"] or 0.0)},
        "step_s": b["step_s"], "predicted_step_s": b["predicted_step_s"], "sites": b["sites"], "cuts": b["cuts"],
        "final_accuracy": b["final_accuracy"], "final_loss": b["final_loss"], "final_test_loss": b["final_test_loss"],
        "train_wall_s": offset + (b["train_wall_s"] or 0.0), "wall_s": a["wall_s"] + b["wall_s"],
        "loss_curve": a["loss_curve"] + [[t + offset, v] for t, v in b["loss_curve"]],
        "accuracy_curve": a["accuracy_curve"] + [[t + offset, st + first, v] for t, st, v in b["accuracy_curve"]],
        "test_loss_curve": a["test_loss_curve"] + [[t + offset, st + first, v] for t, st, v in b["test_loss_curve"]]})
    row["time_to_accuracy_s"] = next((t for t, _, v in row["accuracy_curve"] if v >= config.target_accuracy), None)
    return row


STOP_AHEAD = 3
"""Steps after the detected one at which a pipeline stops for a re-plan: no stage can have
started that step when the detection arrives (a stage finishing step d holds every other stage
within a step of it), so all of them stop at the same boundary."""
def run_one(config: GeoBenchConfig, planned: Planned, placement: str, compression: str,
            geo_tb: Any = None, quotas: Any = None, params_dir: Path | None = None, params_in: Sequence[str] = (),
            skip_steps: int = 0, stop_file: Path | None = None) -> dict[str, Any]:
    """One run. With ``stop_file``, a straggler detected online stops the pipeline
    ``STOP_AHEAD`` steps later, at a step boundary every stage reaches (``steps_done`` says where)."""
    if placement == "dp":
        return run_dp(config, planned, compression, geo_tb, quotas)
    plan = planned.plans[placement]
    plan_sites = [_site(config.topology, c[0]) for c in plan.order]
    pipelines = []
    epochs: dict[str, int] = {}
    for r in range(config.replicas):
        def dp(i: int, site: str, r: int = r) -> dict[str, Any] | None:
            if geo_tb is None or not geo_tb.has_ina(site):
                return None
            if site not in epochs:
                epochs[site] = geo_tb.attach_site(site)
            return {"agent": geo_tb.dp_agent(site, r, epochs[site], max(1, _stage_elements(planned, plan, i))),
                    "replicas": config.replicas}
        pipelines.append(stage_jobs(config, plan, compression, r, dp if config.replicas > 1 else None, geo_tb,
                                    skip_steps, params_dir, params_in, stop_file))
    wan_before = geo_tb.wan_bytes() if geo_tb is not None else None
    spawn = stage_spawner(config, geo_tb)
    hooks: list[_AtStep] = []
    last_stage = len(plan.order) - 1
    if quotas is not None:
        spawn = _quota_spawner(spawn, quotas, plan_sites)
        if config.straggler is not None:
            slow_site, slow_step, slow_share = config.straggler
            hooks.append(_AtStep(last_stage, slow_step, lambda: quotas.set(slow_site, slow_share)))
    rate_hook: _AtStep | None = None
    if config.rate_change is not None and geo_tb is not None:
        a, b, at, mbps = config.rate_change
        rate_hook = _AtStep(last_stage, at, lambda: geo_tb.set_wan_rate(a, b, mbps))
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
    steps = last.of("step")
    evals = last.of("eval")
    times = [s["t"] for s in steps]
    deltas = np.diff([0.0, *times])
    warm = min(3, len(deltas) - 1)
    step_s = float(statistics.median(deltas[warm:]))
    done = [o.of("done")[0] for pipe in outputs for o in pipe]
    # one pipeline's WAN traffic: every stage's sends both ways (probes and evaluation excluded)
    wan_bytes = sum(d["sent_next"] + d["sent_prev"] for d in (o.of("done")[0] for o in outputs[0]))
    ratios = [d["mean_ratio_next"] for d in done if d.get("mean_ratio_next") is not None]
    slow = [i for i, link in enumerate(plan.links) if link.bw_mbps == min(l.bw_mbps for l in plan.links)]
    # the mean ratio of the slowest link's sparsified messages (warm-up and dense ones excluded)
    sparse = [r for i in slow for r in (done[i].get("ratios_next") or []) if r < 1.0]
    ratio = float(np.mean(sparse)) if sparse else 1.0
    # the cost model with what each boundary actually carried per microbatch, each direction
    first = done[:len(plan.order)]
    steps_done = len(steps)
    messages = steps_done * config.microbatches
    carried = [(first[i]["bytes_next"] / messages, first[i + 1]["bytes_prev"] / messages)
               for i in range(len(plan.links))]
    predicted = predict(planned.graph, planned.workload, planned.network, plan.order, plan.cuts,
                        config.microbatches, sent_bytes=carried).step_s
    s0 = slow[0] if slow else None
    compute = {plan_sites[i]: statistics.median([r["s"] for r in o.of("compute")][warm:] or [0.0])
               for i, o in enumerate(outputs[0])}
    return {"placement": placement, "compression": compression, "sites": plan_sites,
            "stage_compute_s": compute, "predicted_stage_compute_s": [c * config.microbatches
                                                                      for c in plan.stage_compute_s],
            "straggler": straggler_effect(config, planned, plan, outputs, list(deltas))
            if config.straggler is not None and quotas is not None else None,
            "stragglers_detected": [{"site": plan_sites[d.stage], "stage": d.stage, "step": d.step,
                                     "factor": d.factor, "baseline_s": d.baseline_s, "recent_s": d.recent_s}
                                    for d in detector.detections],
            "rate_change": rate_change_effect(config, plan, done, rate_hook.fired)
            if rate_hook is not None else None,
            "cuts": list(plan.cuts), "links": [asdict(l) for l in plan.links],
            "step_s": step_s, "predicted_step_s": predicted, **_targets(config, evals),
            "sends": sends_label(first[s0]["codecs_next"], first[s0 + 1]["codecs_prev"],
                                 ratio if compression in ("topk", "adatopk") else None) if s0 is not None else "-",
            "slow_link_bytes_per_step": sum(carried[s0]) * config.microbatches if s0 is not None else 0.0,
            "link_check": link_check(plan, plan_sites, first),
            "slow_link_message_bytes": first[s0]["sizes_next"] if s0 is not None else None,
            "final_accuracy": evals[-1]["accuracy"] if evals else None, "final_loss": steps[-1]["loss"],
            "final_test_loss": evals[-1]["loss"] if evals else None,
            "train_wall_s": times[-1] if times else None,
            "wan_bytes_per_step": wan_bytes / max(steps_done, 1), "slow_link_ratio": ratio, "steps_done": steps_done,
            "mean_ratios": ratios, "wall_s": wall,
            # AdaTopK's ratio per forward message on the slowest link, and the rate the next
            # stage last measured for it (the adaptive ratio follows this, not the probe)
            "slow_link_ratio_curve": done[slow[0]].get("ratios_next") if slow else None,
            "slow_link_probed_bps": done[slow[0]].get("bandwidth_next_bps") if slow else None,
            "slow_link_measured_bps": done[slow[0]].get("measured_rate_next_bps") if slow else None,
            "reduce_s": sum(d["reduce_s"] for d in done),
            "samples_per_step": config.replicas * config.batch * config.microbatches,
            "wan_link_bytes": _wan_delta(wan_before, geo_tb.wan_bytes()) if wan_before is not None else None,
            "loss_curve": [[s["t"], s["loss"]] for s in steps],
            "accuracy_curve": [[e["t"], e["step"], e["accuracy"]] for e in evals],
            "test_loss_curve": [[e["t"], e["step"], e["loss"]] for e in evals]}


LINK_TOLERANCE = 0.10
"""How far a WAN link's probed rate or delay may be from its configuration."""


def link_check(plan: Plan, sites: Sequence[str], done: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each boundary's WAN link as configured and as the stages' start-up probe measured it (rate
    from a 256 KiB round trip against a 1-byte one, one-way delay half the 1-byte round trip),
    and whether both are within ``LINK_TOLERANCE`` of the configuration."""
    out = []
    for i, link in enumerate(plan.links):
        bps, delay_s = done[i].get("bandwidth_next_bps"), done[i].get("delay_next_s")
        if bps is None or delay_s is None:
            continue
        rate_ok = abs(bps / 1e6 - link.bw_mbps) <= LINK_TOLERANCE * link.bw_mbps
        delay_ok = abs(delay_s * 1e3 - link.delay_ms) <= LINK_TOLERANCE * link.delay_ms + 0.5  # +0.5 ms: timer noise
        out.append({"link": f"{sites[i]}-{sites[i + 1]}", "configured_mbps": link.bw_mbps,
                    "configured_delay_ms": link.delay_ms, "probed_mbps": bps / 1e6, "probed_delay_ms": delay_s * 1e3,
                    "within_tolerance": rate_ok and delay_ok})
    return out


def link_check_line(checks: Sequence[dict[str, Any]]) -> str:
    return "; ".join(f"{c['link']} {c['configured_mbps']:g} Mbit/s {c['configured_delay_ms']:g} ms -> "
                     f"{c['probed_mbps']:.1f} Mbit/s {c['probed_delay_ms']:.1f} ms"
                     f"{'' if c['within_tolerance'] else f' (more than {LINK_TOLERANCE:.0%} off)'}" for c in checks)


class _AtStep:
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


def rate_change_effect(config: GeoBenchConfig, plan: Plan, done: list[dict[str, Any]],
                       applied: bool) -> dict[str, Any]:
    """AdaTopK's ratio on the changed link, per step (mean of the step's forward messages):
    before the change, and each step after it. The first stage's messages of step ``at + 1``
    may already be out when the last stage reports ``at``, so the change shows from there."""
    assert config.rate_change is not None
    a, b, at, mbps = config.rate_change
    sites = [_site(config.topology, c[0]) for c in plan.order]
    link = next((i for i in range(len(sites) - 1) if {sites[i], sites[i + 1]} == {a, b}), None)
    def per_step(values: list[float]) -> list[float]:
        m = config.microbatches
        return [float(np.mean(values[s * m:(s + 1) * m])) for s in range(len(values) // m)]

    stage = done[link] if link is not None else {}
    before_mbps = plan.links[link].bw_mbps if link is not None else None
    return {"link": f"{a}-{b}", "step": at, "before_mbps": before_mbps, "after_mbps": mbps,
            "applied": applied, "boundary": link, "ratio_per_step": per_step(stage.get("ratios_next") or []),
            # the next stage's estimate of the link's rate, as it arrived with each backward message
            "measured_mbps_per_step": [r / 1e6 for r in per_step(stage.get("rates_next_bps") or [])]}


def _wan_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Bytes each WAN link end sent during one run (every pipeline, probes and evaluation included)."""
    return {iface: after[iface] - before[iface] for iface in after}


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


def run(config: GeoBenchConfig, progress: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
    """Every run of ``config.runs`` on one testbed; the result document. Ctrl-C during the
    runs ends them early: the document holds the rows so far and ``"partial": True``."""
    rows = []
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
                if config.replan and placement != "dp":
                    row = run_replanned(config, planned, placement, compression, geo_tb, quotas)
                else:
                    row = run_one(config, planned, placement, compression, geo_tb, quotas)
                progress(f"  step {row['step_s'] * 1e3:.1f} ms (predicted {row['predicted_step_s'] * 1e3:.1f}), "
                         f"time to {config.target_accuracy:.0%}: {row['time_to_accuracy_s']}, "
                         f"final accuracy {row['final_accuracy']}")
                if row.get("straggler"):
                    progress(f"  straggler: {straggler_line(row['straggler'])}")
                if row.get("rate_change"):
                    progress(f"  rate change: {rate_change_line(row['rate_change'])}")
                if row.get("replan"):
                    progress(f"  re-planned: {replan_line(row['replan'])}")
                rows.append(row)
        except KeyboardInterrupt:
            partial = True
    finally:
        if quotas is not None:
            quotas.close()
        if geo_tb is not None:
            geo_tb.stop()
    ref = next((r for r in rows if (r["placement"], r["compression"]) == REFERENCE), None)
    for r in rows:  # OP-Fence + AdaTopK's speedup against this run
        r["speedup_step"] = r["step_s"] / ref["step_s"] if ref else None
        r["speedup_tta"] = (r["time_to_accuracy_s"] / ref["time_to_accuracy_s"]
                            if ref and ref["time_to_accuracy_s"] and r["time_to_accuracy_s"] else None)
        r["speedup_ttl"] = (r["time_to_loss_s"] / ref["time_to_loss_s"]
                            if ref and ref["time_to_loss_s"] and r["time_to_loss_s"] else None)
    equal_wall_loss(rows)
    settings = {k: v for k, v in asdict(config).items() if k not in ("topology", "out_dir")}
    settings["topology"] = str(config.topology)
    settings["wan_emulation"] = wan_description(config.testbed)
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine(), "settings": settings,
            "load_average": list(os.getloadavg()),
            "site_speeds": planned.site_speeds, "probe_s": planned.probe_s,
            "clusters": [list(c) for c in planned.clusters],
            "plans": {k: p.describe(k) for k, p in planned.plans.items()}, "rows": rows, "partial": partial}


def equal_wall_loss(rows: list[dict[str, Any]]) -> float | None:
    """Every row's test loss at the same training wall time, the shortest run's (its last
    evaluation at or before then), in ``loss_at_equal_wall``; returns that time."""
    walls = [r["train_wall_s"] for r in rows if r.get("train_wall_s")]
    if not walls:
        return None
    wall = min(walls)
    for r in rows:
        seen = [v for t, _, v in r.get("test_loss_curve", []) if t <= wall * (1 + 1e-9)]
        r["equal_wall_s"] = wall
        r["loss_at_equal_wall"] = seen[-1] if seen else None
    return wall


def combine(docs: dict[str, dict[str, Any]], absent: dict[str, str] | None = None) -> dict[str, Any]:
    """One document of runs made on several switch implementations (``innet``, ``bmv2``), in
    that order: the first run's settings and plans, every run's rows labelled with its switch
    (speedups stay against each switch's own OP-Fence + AdaTopK row), and the switches asked
    for but not there (``switch_absent``: implementation -> why)."""
    if not docs:
        raise GeoBenchError("geo bench: no switch implementation to run")
    first = next(iter(docs.values()))
    rows = [{**r, "switch": impl} for impl, doc in docs.items() for r in doc["rows"]]
    return {**first, "rows": rows, "switches": list(docs), "switch_absent": dict(absent or {})}


def rate_change_line(c: dict[str, Any]) -> str:
    """One line: the changed link's rates and AdaTopK's ratio per step around the change."""
    per = c["ratio_per_step"]
    at = c["step"]
    shown = " ".join(f"{x:.3f}" for x in per[max(0, at - 2):at + 6])
    rates = " ".join(f"{x:.2f}" for x in c.get("measured_mbps_per_step", [])[max(0, at - 2):at + 6])
    before = f"{c['before_mbps']:g}" if c["before_mbps"] is not None else "?"
    return (f"link {c['link']} {before} -> {c['after_mbps']:g} Mbit/s after step {at}"
            f"{'' if c['applied'] else ' (not applied: the run ended first)'}; from step {max(0, at - 2)}, "
            f"measured Mbit/s per step: {rates}; ratio per step: {shown}")


def straggler_line(s: dict[str, Any]) -> str:
    """One line: what the straggler did to the step and what a re-plan would pick."""
    def ms(v: float | None) -> str:
        return f"{v * 1e3:.1f}" if v is not None else "-"

    line = (f"site {s['site']} to {s['share']:g} CPU after step {s['step']}: step {ms(s['step_before_s'])} -> "
            f"{ms(s['step_after_s'])} ms, its stage's compute {ms(s['compute_before_s'])} -> "
            f"{ms(s['compute_after_s'])} ms/step")
    if s.get("replan"):
        r = s["replan"]
        line += (f"; measured speed {s['speed_before']:.2f} -> {s['speed_after']:.2f}; OP-Fence's plan with it: "
                 f"{'-'.join(r['sites'])} cuts {r['cuts']} predicted "
                 f"{ms(r['predicted_step_s'])} ms vs {ms(r['kept_plan_predicted_step_s'])} ms keeping the plan")
    return line


def replan_line(r: dict[str, Any]) -> str:
    def ms(v: float | None) -> str:
        return f"{v * 1e3:.1f}" if v is not None else "-"

    d = r.get("detected") or {}
    return (f"site {r.get('site', '?')} detected online at step {d.get('step', '?')} "
            f"({d.get('factor', 0):.1f}x its compute); after step {r['at_step']}: "
            f"{'-'.join(r['sites_before'])} cuts {r['cuts_before']} -> "
            f"{'-'.join(r['sites_after'])} cuts {r['cuts_after']} (straggler speed {r['speed_after']:.2f}); step "
            f"{ms(r['step_after_straggler_s'])} ms with the straggler -> {ms(r['step_after_replan_s'])} ms "
            f"re-planned (predicted {ms(r['predicted_after_replan_s'])}); pause {r['replan_pause_s']:.1f} s")


def table(doc: dict[str, Any]) -> str:
    several = len(doc.get("switches", [])) > 1
    rows = doc["rows"]
    goal = rows[0].get("target_loss") if rows else None
    wall = rows[0].get("equal_wall_s") if rows else None
    lines = [f"{'switch ' if several else ''}{'placement':9} {'compress':8} {'sites':7} {'step ms':>8} {'pred ms':>8} "
             f"{'TTA s':>7} {'TTL s':>7} {'acc':>5} {'loss':>6} {'@wall':>6} {'WAN kB/step':>11} {'slow kB':>8} "
             f"{'x step':>6} {'x TTA':>6} {'x TTL':>6}  sends on the slowest link"]
    # x step / x TTA / x TTL: OP-Fence + AdaTopK's speedup against the row (paper: 1.45-9.39x)
    for r in rows:
        def num(key: str, fmt: str = ".1f") -> str:
            v = r.get(key)
            return format(v, fmt) if v is not None else "-"
        pred = f"{r['predicted_step_s'] * 1e3:8.1f}" if r["predicted_step_s"] is not None else f"{'-':>8}"
        lines.append(f"{r.get('switch', 'innet'):6} " * several
                     + f"{r['placement']:9} {r['compression']:8} {'-'.join(r['sites']):7} {r['step_s'] * 1e3:8.1f} "
                     f"{pred} {num('time_to_accuracy_s'):>7} {num('time_to_loss_s'):>7} {r['final_accuracy'] or 0:5.3f} "
                     f"{num('final_test_loss', '.3f'):>6} {num('loss_at_equal_wall', '.3f'):>6} "
                     f"{r['wan_bytes_per_step'] / 1e3:11.1f} {r.get('slow_link_bytes_per_step', 0) / 1e3:8.1f} "
                     f"{num('speedup_step', '.2f'):>6} {num('speedup_tta', '.2f'):>6} {num('speedup_ttl', '.2f'):>6}  "
                     f"{r.get('sends', '-')}")
    if goal is not None:
        lines.append(f"TTL: training seconds to test loss {goal:g} nats; @wall: test loss at {wall or 0:.1f} s "
                     "of training (the shortest run); slow kB: bytes per step on the slowest link, both ways")
    if doc.get("site_speeds"):
        lines.append("measured site speeds (1.0 = the planning process): "
                     + ", ".join(f"{s} {v:.2f}" for s, v in doc["site_speeds"].items()))
        by = {(r["placement"], r["compression"]): r for r in doc["rows"]}
        for comp in COMPRESSIONS:
            aware, blind = by.get(("opfence", comp)), by.get(("uniform", comp))
            if aware and blind:
                lines.append(f"speed-aware plan ({'-'.join(aware['sites'])} cuts {aware['cuts']}) vs the plan made "
                             f"assuming equal speeds ({'-'.join(blind['sites'])} cuts {blind['cuts']}), {comp}: "
                             f"{blind['step_s'] * 1e3:.1f} -> {aware['step_s'] * 1e3:.1f} ms per step "
                             f"({blind['step_s'] / aware['step_s']:.2f}x)")
    for r in doc["rows"]:
        if r.get("link_check"):
            lines.append(f"links of {r['placement']}/{r['compression']} (configured -> probed): "
                         f"{link_check_line(r['link_check'])}")
        for d in r.get("stragglers_detected") or []:
            lines.append(f"straggler detected online in {r['placement']}/{r['compression']}: site {d['site']} "
                         f"(stage {d['stage']}) at step {d['step']}, compute {d['baseline_s'] * 1e3:.1f} -> "
                         f"{d['recent_s'] * 1e3:.1f} ms/step ({d['factor']:.1f}x)")
        if r.get("straggler"):
            lines.append(f"straggler in {r['placement']}/{r['compression']}: {straggler_line(r['straggler'])}")
        if r.get("rate_change"):
            lines.append(f"rate change in {r['placement']}/{r['compression']}: {rate_change_line(r['rate_change'])}")
        if r.get("replan"):
            lines.append(f"re-planned {r['placement']}/{r['compression']}: {replan_line(r['replan'])}")
    lines += [f"no {impl} rows: {why}" for impl, why in doc.get("switch_absent", {}).items()]
    return "\n".join(lines)


def plot(doc: dict[str, Any], path: Path) -> Path:
    from innet.testbed.core.report import plain_log_ticks, pyplot

    plt = pyplot()

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in doc["rows"]:
        label = f"{r['placement']} / {r['compression']}" + (f" ({r['switch']})" if "switch" in r else "")
        curve = np.array(r["loss_curve"])
        ax1.plot(curve[:, 0], curve[:, 1], label=label)
        acc = np.array(r["accuracy_curve"])
        if len(acc):
            ax2.plot(acc[:, 0], acc[:, 2], marker=".", label=label)
    s = doc["settings"]
    ax1.set_xlabel("training wall-clock (s)")
    ax1.set_ylabel("training loss")
    ax1.set_xscale("log")
    ax2.set_xlabel("training wall-clock (s)")
    ax2.set_ylabel("test accuracy")
    ax2.set_xscale("log")
    ax2.axhline(s["target_accuracy"], color="grey", lw=0.5)
    for ax in (ax1, ax2):
        plain_log_ticks(ax.xaxis)
    ax1.legend(fontsize=8)
    fig.suptitle(f"innet geo: {s['task']}, 3 sites (WAN 10M/40ms, 100M/10ms, 1G/2ms), {s['microbatches']}x"
                 f"{s['batch']} per step, {s['replicas']} pipeline(s), {doc['machine']['cores']} cores, "
                 f"{s.get('testbed', 'loopback')}, WAN delay by {s['wan_emulation'].split(':')[0]}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def save(doc: dict[str, Any], out_dir: Path, stem: str = "geo-bench") -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = doc["date"].replace(":", "").replace("-", "")
    tier = "-mininet" if doc["settings"].get("testbed") == "mininet" else ""
    json_path = out_dir / f"{stem}-{doc['settings']['task']}{tier}-{stamp}.json"
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    return json_path, plot(doc, json_path.with_suffix(".png"))


__all__ = ["GeoBenchConfig", "combine", "plan_all", "run", "save", "stage_jobs", "table"]
