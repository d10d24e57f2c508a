"""What runs on a brought-up rail testbed: the collectives, and training with the rail switches
as the optimizer. Each is a function of a :class:`~innet.testbed.rail.testbed.RailTestbed`.

    with RailTestbed(rail_optimized(domains=2, gpus_per_domain=4), backend="loopback") as tb:
        exact = hierarchical(tb, [1000, 65536])        # per GPU, one WorkerResult per size
        ring = hierarchical(tb, [1000], collective="ring")
        spine = flat(tb, [1000])                       # rail-optimized: every GPU through the spine
        a2a = alltoall(tb, 50000, route="two-step")
        run = training(tb, "momentum", steps=5, param_chunks=8, lr=0.1, beta=0.9)
        assert (predict_training(tb, run, "momentum", 5) == run.registers).all()

Allreduce results are per GPU (by global rank) the workers' :class:`WorkerResult` lines;
training returns a :class:`TrainingRun`. A training run replaces the testbed's job by one
of its mode (``replace_job``); run a collective after it with ``tb.replace_job()``.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from innet.testbed.core.ina_worker import WORKER_MODULE as INA_WORKER, WorkerPlan
from innet.testbed.core.testbed import TestbedError, WorkerResult, parse_results, wait_outputs
from innet.testbed.rail.grid import ring_order
from innet.testbed.rail.worker import WORKER_MODULE as RAIL_WORKER

if TYPE_CHECKING:
    from innet.controller.jobs import JobInfo
    from innet.testbed.rail.digits import DigitsConfig, StepLoss
    from innet.testbed.rail.testbed import RailTestbed

Procs = list[tuple[str, "subprocess.Popen[bytes]"]]


@dataclass(frozen=True)
class TrainingRun:
    """A training run on the rail switches: what every GPU and every switch ended with."""

    finals: dict[int, np.ndarray]
    """Every GPU's final parameters (int32), by global rank."""
    registers: np.ndarray
    """The switches' parameter registers (int32), the rails' shards concatenated."""
    jobs: dict[str, JobInfo]
    """Each rail's installed job (its optimizer integers)."""
    initial: np.ndarray
    """The parameters the job started with."""
    lines: dict[int, GpuLines] = field(default_factory=dict)
    """Digits runs: what every GPU printed, by global rank."""


@dataclass(frozen=True)
class GpuLines:
    """What one training GPU (``rail_worker``) printed, read from its JSON lines."""

    rank: int
    steps: tuple[StepLoss, ...] = ()
    """Digits: its loss at every step it ran, with the time it printed each."""
    ready: float | None = None
    """Digits: when its agent, HB domain and data were up (``time.time()``)."""
    final: np.ndarray | None = None
    """Its final int32 parameters."""

    @classmethod
    def from_json_lines(cls, lines: Sequence[dict[str, Any]]) -> GpuLines:
        """The record of one process's printed JSON lines (at least one; all of one rank)."""
        from innet.testbed.rail.digits import StepLoss  # the digits model loads only for training

        steps, ready, final = [], None, None
        for d in lines:
            if "step" in d:
                steps.append(StepLoss.from_json(d))
            if "ready" in d:
                ready = float(d["ready"])
            if "final" in d:
                final = np.asarray(d["final"], np.int64).astype(np.int32)
        return cls(int(lines[0]["rank"]), tuple(steps), ready, final)


def collect_results(tb: RailTestbed, procs: Procs, timeout: float, what: str) -> list[list[WorkerResult]]:
    """Wait for allreduce/all-to-all workers; per process, its results."""
    outputs = wait_outputs(tb.procs, procs, timeout, what)
    return [parse_results(outputs[name].decode(errors="replace")) for name, _ in procs]


def collect_lines(tb: RailTestbed, procs: Procs, timeout: float, what: str) -> list[GpuLines]:
    """Wait for ``rail_worker`` training processes; what each that printed anything printed."""
    outputs = wait_outputs(tb.procs, procs, timeout, what)
    parsed = [[json.loads(line) for line in outputs[name].decode().splitlines() if line.startswith("{")]
              for name, _ in procs]
    return [GpuLines.from_json_lines(lines) for lines in parsed if lines]


def slowest_times(per_rank: list[list[WorkerResult]], index: int) -> list[float]:
    """Per timed operation of result ``index``, the slowest GPU's time (a collective ends
    when the last GPU has it)."""
    reps = len(per_rank[0][index].times)
    return [max(r[index].times[i] for r in per_rank) for i in range(reps)]


def hierarchical(tb: RailTestbed, sizes: Sequence[int], repeats: int = 1, timeout: float = 120.0,
                 collective: str = "ina") -> list[list[WorkerResult]]:
    """Hierarchical allreduce of ``sizes`` (exact integers, checked) on every GPU; per global
    rank. ``collective``: ``ina`` (the rail switches sum) or ``ring`` (the GPUs of each rail
    reduce-scatter and all-gather over TCP through it: NCCL's hierarchical ring)."""
    if collective != "ring":
        procs = tb.spawn_rail("allreduce", sizes=tuple(sizes), repeats=repeats)
        return collect_results(tb, procs, timeout, "hierarchical allreduce")
    rail = {h.name: tb.alltoall_addresses(h.name)["rail"] for h in tb.topology.workers}
    rows = tb.active_rows()
    plans = [(host, replace(plan, collective="ring", rail_peers=tuple(rail[row[plan.gpu]] for row in rows)))
             for host, plan in tb.rail_plans("allreduce", tb.attach(), sizes=tuple(sizes), repeats=repeats)]
    return collect_results(tb, tb.spawn_workers(RAIL_WORKER, "rail", plans), timeout,
                           "hierarchical ring allreduce")


def flat(tb: RailTestbed, sizes: Sequence[int], repeats: int = 1, exact: bool = True,
         timeout: float = 120.0) -> list[list[WorkerResult]]:
    """Flat INA through the spine (rail-optimized): every GPU in one job of ``x*y`` workers."""
    if tb.flat is None or tb.grid.spine is None:
        raise TestbedError(f"topology {tb.topology.name}: flat INA needs a spine (rail-optimized)")
    epoch = int(tb.controller.attach(tb.flat.job_id))
    workers = tb.topology.workers
    plans = [(h.name, WorkerPlan(job=tb.flat.job_id, rank=h.rank or 0, num_workers=len(workers),
                                 window=tb.options.window, k=tb.options.k,
                                 transport=tb.transport_to(h.name, tb.grid.spine), sizes=tuple(sizes), epoch=epoch,
                                 repeats=repeats, exact=exact, chunk_deadline=tb.options.chunk_deadline,
                                 count_iface=tb.count_iface(h.name)))
             for h in workers]
    return collect_results(tb, tb.spawn_workers(INA_WORKER, "flat", plans), timeout, "flat allreduce")


def alltoall(tb: RailTestbed, pair_bytes: int, repeats: int = 1, route: str | None = None,
             timeout: float = 120.0) -> list[list[WorkerResult]]:
    """Uniform all-to-all of ``pair_bytes`` per GPU pair on every GPU; ``route`` defaults to
    ``direct`` on rail-optimized and ``two-step`` on rail-only (which has no other)."""
    from innet.testbed.rail.alltoall_worker import WORKER_MODULE as A2A_WORKER, AllToAllPlan

    grid = tb.grid
    route = route or ("direct" if grid.spine is not None else "two-step")
    if route == "direct" and grid.spine is None:
        raise TestbedError(f"topology {tb.topology.name}: the direct all-to-all needs a spine; "
                           "rail-only routes through the HB domain (two-step)")
    addr = {h.name: tb.alltoall_addresses(h.name) for h in tb.topology.workers}
    plans = []
    for d, row in enumerate(grid.hosts):
        for g, host in enumerate(row):
            if route == "two-step":
                fields: dict[str, Any] = {
                    "hb_peers": tuple(addr[h]["hb"] for h in row),
                    "rail_peers": tuple(addr[r[g]]["rail"] for r in grid.hosts)}
            else:
                fields = {"direct_peers": tuple(addr[other.name]["direct_hb" if grid.position(other.name)[0] == d
                                                               else "direct"] for other in tb.topology.workers),
                          "direct_bind": addr[host]["direct_bind"]}
            plans.append((host, AllToAllPlan(x=grid.x, y=grid.y, domain=d, gpu=g, pair_bytes=pair_bytes,
                                             route=route, repeats=repeats, **fields)))
    return collect_results(tb, tb.spawn_workers(A2A_WORKER, "a2a", plans), timeout, f"all-to-all ({route})")


def gloo(tb: RailTestbed, sizes: Sequence[int], repeats: int = 3, timeout: float = 300.0,
         master_port: int | None = None) -> list[list[WorkerResult]]:
    """gloo ring allreduce over every GPU, gloo ranks in :func:`ring_order` (ring neighbours
    share an HB domain or a rail). On rail-only the other pairs of gloo's full mesh reach
    each other through the hosts' relay routes (Mininet); per gloo rank."""
    from innet.testbed.core.gloo import command, gloo_env

    ring = ring_order(tb.grid)
    master = tb.gloo_master()
    master_port = master_port or tb.free_port()
    procs = []
    for rank, host in enumerate(ring):
        argv = command(rank, len(ring), master, master_port, sizes, repeats, count_iface=tb.count_iface(host))
        name = f"gloo-{host}"
        procs.append((name, tb.spawn_on(host, name, argv, env=gloo_env(tb.gloo_iface(host), master, master_port),
                                        stdout_pipe=True)))
    return collect_results(tb, procs, timeout, "gloo allreduce")


def training(tb: RailTestbed, mode: str, steps: int, param_chunks: int, lr: float, beta: float = 0.0,
             initial: np.ndarray | None = None, timeout: float = 120.0) -> TrainingRun:
    """Replace the job by an ``sgd``/``momentum`` one holding ``initial`` (int32, default
    zeros), run ``steps`` hierarchical steps of ``rail_worker.train_gradient``."""
    tb.replace_job(mode=mode, param_chunks=param_chunks, lr=lr, beta=beta)
    size = param_chunks * tb.options.k
    start = np.zeros(size, np.int32) if initial is None else np.asarray(initial, np.int32)
    tb.controller.load_params(tb.job.job_id, start)
    procs = tb.spawn_rail("train", steps=steps, params=size)
    finals, _ = _finals(collect_lines(tb, procs, timeout, "hierarchical training"))
    return _run(tb, finals, start)


def digits(tb: RailTestbed, config: DigitsConfig, timeout: float = 300.0) -> TrainingRun:
    """Train the digits model (:mod:`innet.testbed.rail.digits`, ``config`` over every GPU of
    the job) with the rail switches as the optimizer, replacing the job."""
    initial = digits_job(tb, config)
    procs = tb.spawn_rail("digits", params=initial.size, digits=config)
    return digits_outputs(tb, procs, initial, timeout)


def digits_job(tb: RailTestbed, config: DigitsConfig) -> np.ndarray:
    """Replace the job by ``config``'s holding its initial parameters; those parameters."""
    if config.gpus != tb.gpus:
        raise TestbedError(f"digits training for {config.gpus} GPUs on {tb.topology.name} "
                           f"({tb.gpus} GPUs in the job)")
    tb.replace_job(mode=config.mode, param_chunks=config.param_chunks(tb.options.k), lr=config.lr,
                   beta=config.beta if config.mode == "momentum" else 0.0,
                   grad_frac_bits=config.grad_frac_bits, param_frac_bits=config.param_frac_bits)
    initial = config.initial(tb.options.k)
    tb.controller.load_params(tb.job.job_id, initial)
    return initial


def digits_outputs(tb: RailTestbed, procs: Procs, initial: np.ndarray, timeout: float) -> TrainingRun:
    """Wait for a digits run's GPUs (:func:`digits`' result, with every GPU's lines)."""
    finals, lines = _finals(collect_lines(tb, procs, timeout, "digits training"))
    return replace(_run(tb, finals, initial), lines=lines)


def _finals(outputs: list[GpuLines]) -> tuple[dict[int, np.ndarray], dict[int, GpuLines]]:
    finals = {g.rank: g.final for g in outputs if g.final is not None}
    return finals, {g.rank: g for g in outputs}


def _run(tb: RailTestbed, finals: dict[int, np.ndarray], initial: np.ndarray) -> TrainingRun:
    registers = tb.controller.read_params(tb.job.job_id, as_float=False)
    infos = {rail: tb.controller[rail].job(tb.job.job_id) for rail in tb.grid.rails}
    return TrainingRun(finals, np.asarray(registers, np.int32), infos, initial)


def predict_training(tb: RailTestbed, run: TrainingRun, mode: str, steps: int) -> np.ndarray:
    """The parameters :class:`innet.wire.switch_model.SwitchModel` gives for the gradients of
    :func:`training`'s ``run``, shard by shard with each rail's installed integers."""
    from innet.wire import Mode
    from innet.wire.switch_model import SwitchModel
    from innet.testbed.rail.grid import shard_bounds
    from innet.testbed.rail.worker import train_gradient

    initial = run.initial
    bounds = shard_bounds(initial.size, tb.options.k, tb.grid.x)
    gpus = tb.gpus
    grads = [[train_gradient(r, s, initial.size) for r in range(gpus)] for s in range(steps)]
    parts = []
    for g, rail in enumerate(tb.grid.rails):
        info = run.jobs[rail]
        a, b = bounds[g]
        model = SwitchModel(Mode[mode.upper()], initial[a:b].copy(), info.lr, info.lr_shift, info.beta,
                            info.beta_shift)
        for s in range(steps):
            model.step([grads[s][r][a:b] for r in range(gpus)])
        parts.append(model.params)
    return np.concatenate(parts)
