"""One training process of the PyTorch runs: an MLP on digits or a synthetic task, six ways.

    python -m innet.testbed.luwu.train '<TrainSpec JSON>'

- ``local``: one process, torch Adam on the union of the N workers' batches (the reference);
- ``ddp-gloo``: ``DistributedDataParallel`` (gloo allreduce) + torch Adam, rank ``rank`` of N;
- ``ddp-innet``: the same with ``register_innet_hook`` (the one changed line): buckets are
  summed by the switch through this worker's agent;
- ``luwu``: ``ModelInNetwork`` against the optimizer node(s) (``overlap`` False: push after
  backward and pull before forward, serialized; the baseline of the overlap);
- ``fsdp``: FSDP2 (``torch.distributed.fsdp.fully_shard`` per layer and on the root, gloo) +
  torch Adam on the shards: the model-sharded data parallelism LuWu is compared with;
- ``fsdp-offload``: the same with ``CPUOffloadPolicy`` (parameters, gradients and Adam on
  the host; on a CPU-only machine this adds only the copies, unpinned: nothing to pin for);
- ``allreduce-gloo``, ``allreduce-innet``: no model compute, each step one averaging
  allreduce of the model's gradient size (gloo ``all_reduce``; ``Agent.allreduce_into``, what
  the DDP hook calls per bucket): the bare collectives the DDP modes are held against.

The batches are ``innet.testbed.luwu.data.Batches`` (digits, or the synthetic task of the
>= 10 M-parameter benchmark model); the union over ranks is what ``local`` trains on. One
JSON line per step (``{"step", "loss", "seconds"}``) and a final line (``{"final": true,
"accuracy", ...}``) with memory (RSS now and at its peak; tensor bytes: parameters,
gradients, optimizer state at their peak) and, when ``count_iface`` names this host's link,
the interface's bytes sent and received over the steps after ``warmup``; on an error,
``{"failed": <exception type>, "monotonic": <time.monotonic()>}`` and exit 3.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence
from innet.host.agent.transport import TransportConfig
from innet.host.luwu.plan import LuwuPlan
from innet.plans import JsonPlan, worker_main
from innet.rss import peak_rss_bytes, rss_bytes
from innet.testbed.luwu.records import CpuPerStep, HookComm, LinkCount, LuwuComm, StepReport, TrainerFinal

MODULE = "innet.testbed.luwu.train"
MODES = ("local", "ddp-gloo", "ddp-innet", "luwu", "fsdp", "fsdp-offload", "allreduce-gloo", "allreduce-innet")
DISTRIBUTED = ("ddp-gloo", "ddp-innet", "fsdp", "fsdp-offload", "allreduce-gloo", "allreduce-innet")
"""Modes whose workers are the job's (and a gloo process group's) ranks."""


@dataclass(frozen=True)
class TrainSpec(JsonPlan):
    """One trainer's run, the JSON on its command line (:mod:`innet.plans` writes and reads it);
    its transports and LuWu plan are their records here and their JSON objects there."""

    mode: str
    rank: int = 0
    world: int = 1
    steps: int = 60
    batch: int = 32
    lr: float = 0.003
    hidden: tuple[int, ...] = (128, 64)
    seed: int = 0
    transport: TransportConfig | None = None
    """The rank's agent transport (``Testbed.host_transport``); None in a mode without agents."""
    job: int = 1
    window: int = 64
    k: int = 64
    epoch: int = 0
    plan: LuwuPlan | None = None
    """The job's LuWu plan (``luwu``); None in the other modes."""
    master: tuple[str, int] = ("127.0.0.1", 0)
    overlap: bool = True
    chunk_deadline: float = 20.0
    data: str = "digits"
    """``digits`` or ``synthetic`` (``innet.testbed.luwu.data``)."""
    inputs: int = 64
    """Input features (64 for digits)."""
    classes: int = 10
    warmup: int = 2
    """Steps before the interface counters are read (not counted in the link bytes)."""
    pull_transport: TransportConfig | None = None
    """The second agent's transport of a duplex LuWu plan (``LuwuPlan.pull_job``)."""
    outstanding: int = 0
    """Chunks in flight per agent of the ``ddp-innet`` hook (``Timing.max_outstanding``); 0:
    the job's window."""
    count_iface: str | None = None
    """This host's link, whose counters (``/proc/net/dev`` of this namespace) give the bytes
    sent and received per step; None where there is none (loopback)."""



def build_model(spec: TrainSpec) -> Any:
    import torch

    torch.manual_seed(spec.seed)
    sizes = (spec.inputs, *spec.hidden, spec.classes)
    layers: list[Any] = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def batches(spec: TrainSpec) -> Any:
    """The spec's ``luwu_data.Batches``."""
    from innet.testbed.luwu.data import Batches

    return Batches(spec.data, spec.inputs, spec.classes, spec.batch, spec.world, spec.seed)


def _rss() -> int:
    return rss_bytes() or 0


def _rss_peak() -> int:
    return peak_rss_bytes()


def _local_bytes(t: Any) -> int:
    """Bytes this process holds of ``t`` (a DTensor's local shard; a plain tensor whole)."""
    local = t.to_local() if hasattr(t, "to_local") else t
    return int(local.numel() * local.element_size())


def _tensor_bytes(model: Any, opt: Any | None) -> int:
    total = sum(_local_bytes(p) for p in model.parameters())
    total += sum(_local_bytes(p.grad) for p in model.parameters() if p.grad is not None)
    if opt is not None:
        for state in opt.state.values():
            total += sum(_local_bytes(v) for v in state.values() if hasattr(v, "numel"))
    return int(total)


def _largest_layer_bytes(model: Any) -> int:
    """Unsharded bytes of the largest layer: what FSDP2 all-gathers for one layer's forward or
    backward. It holds the running layer's and (prefetching) the next one's at once, so the
    FSDP rows add twice this to the sharded tensors they measure."""
    sizes = [sum(p.numel() * p.element_size() for p in m.parameters(recurse=False)) for m in model.modules()]
    return int(max(sizes, default=0))


def _cpu(agent: Any | None) -> tuple[float, float]:
    """CPU seconds so far of this process (every thread) and of the process of ``agent`` (an
    agent or a tuple of them: a duplex LuWu worker's two; 0 without)."""
    from innet.testbed.core.processes import cpu_seconds

    theirs = 0.0
    for one in agent if isinstance(agent, tuple) else (agent,):
        pid = one._process.pid if one is not None and one._process is not None else None
        try:
            theirs += cpu_seconds(pid) if pid is not None else 0.0
        except (OSError, ValueError, IndexError):
            pass
    return time.process_time(), theirs


def _cpu_report(start: tuple[float, float] | None, agent: Any | None, steps: int) -> CpuPerStep | None:
    """CPU seconds per timed step of the trainer and its agent since ``start`` (None: not taken)."""
    if start is None:
        return None
    end = _cpu(agent)
    return CpuPerStep(trainer=(end[0] - start[0]) / steps, agent=(end[1] - start[1]) / steps)


def _link(spec: TrainSpec) -> Any:
    """This host's link counters now, None without a link to count."""
    if spec.count_iface is None:
        return None
    from innet.testbed.core import ifstats

    return ifstats.read(spec.count_iface)


def _fsdp(model: Any, offload: bool) -> None:
    """FSDP2 on every layer and on the root (the usual per-block wrapping)."""
    from torch.distributed.fsdp import CPUOffloadPolicy, OffloadPolicy, fully_shard

    # pin_memory needs an accelerator; on a CPU-only host the offload is CPU -> CPU anyway
    policy = CPUOffloadPolicy(pin_memory=False) if offload else OffloadPolicy()
    for module in model.modules():
        if module is not model and any(True for _ in module.parameters(recurse=False)):
            fully_shard(module, offload_policy=policy)
    fully_shard(model, offload_policy=policy)


def _print(doc: dict[str, Any]) -> None:
    """One JSON line on stdout: the trainer's messages to the run that started it."""
    print(json.dumps(doc), flush=True)


def agent_transport(spec: TrainSpec) -> TransportConfig:
    """The spec's agent transport; ValueError when a mode with agents has none."""
    if spec.transport is None:
        raise ValueError(f"TrainSpec of rank {spec.rank}: mode {spec.mode!r} runs an agent but transport is null")
    return spec.transport


def _agent(spec: TrainSpec) -> Any:
    """A started agent of this rank in the spec's sum job."""
    from innet.host.agent.agent import Agent, AgentConfig
    from innet.host.agent.aggregator import JobConfig, Timing

    return Agent(AgentConfig(JobConfig(spec.job, spec.rank, spec.world, spec.window, spec.k, epoch=spec.epoch),
                             agent_transport(spec),
                             timing=Timing(chunk_deadline=spec.chunk_deadline,
                                           max_outstanding=spec.outstanding or None))).start()


Emit = Callable[[dict[str, Any]], None]
"""Where a trainer's JSON lines go: every step's, then the final report."""


def run_allreduce(spec: TrainSpec, emit: Emit = _print) -> int:
    """The ``allreduce-*`` modes (see module docstring): the same report as a training run."""
    import numpy as np
    import torch

    torch.set_num_threads(1)
    params = sum(p.numel() for p in build_model(spec).parameters())
    grads = torch.from_numpy(np.random.default_rng([spec.seed, spec.rank]).standard_normal(params, np.float32))
    closers: list[Any] = []
    try:
        if spec.mode == "allreduce-gloo":
            import torch.distributed as dist
            from datetime import timedelta

            from innet.testbed.core.gloo import rendezvous_store

            store = rendezvous_store(spec.rank, spec.world, spec.master[0], spec.master[1], timedelta(seconds=60))
            dist.init_process_group("gloo", store=store, rank=spec.rank, world_size=spec.world,
                                    timeout=timedelta(seconds=60))
            closers.append(dist.destroy_process_group)

            def once() -> None:
                dist.all_reduce(grads)
                grads.div_(spec.world)
        else:
            agent = _agent(spec)
            closers.append(agent.close)
            view = grads.numpy()

            def once() -> None:
                agent.allreduce_into(view, view, divisor=spec.world)
        times: list[float] = []
        link_start = link_end = None
        cpu_start = None
        agent_or_none = agent if spec.mode == "allreduce-innet" else None
        for s in range(spec.steps):
            if s == min(spec.warmup, spec.steps - 1):
                link_start = _link(spec)
                cpu_start = _cpu(agent_or_none)
            start = time.perf_counter()
            once()
            times.append(time.perf_counter() - start)
            if s == spec.steps - 1:
                link_end = _link(spec)
            emit(StepReport(s, 0.0, times[-1]).to_json())
        emit(TrainerFinal(
            mode=spec.mode, rank=spec.rank, accuracy=float("nan"), rss_bytes=_rss(), rss_peak_bytes=_rss_peak(),
            step_seconds=times, params=params, tensor_bytes_peak=4 * params,
            link=_link_report(spec, link_start, link_end),
            cpu_per_step=_cpu_report(cpu_start, agent_or_none, spec.steps - min(spec.warmup, spec.steps - 1)),
            agent_stats=(agent.last.stats if agent.last else {}) if spec.mode == "allreduce-innet" else None,
        ).to_json())
        if spec.mode in DISTRIBUTED:
            import torch.distributed as dist

            # gloo's barrier first waits for every collective still queued on the group (FSDP2
            # may have one in flight after the accuracy pass). Destroying the group with one
            # pending aborted the process ("terminate called without an active exception") in
            # about one FSDP run in twelve.
            dist.barrier()
    finally:
        for close in reversed(closers):
            close()
    return 0


def _link_report(spec: TrainSpec, start: Any, end: Any) -> LinkCount | None:
    """The link's bytes and packets over the timed steps (None: not counted)."""
    if start is None or end is None:
        return None
    delta = end - start
    return LinkCount(steps=spec.steps - min(spec.warmup, spec.steps - 1), sent_bytes=delta.tx_bytes,
                     received_bytes=delta.rx_bytes, sent_packets=delta.tx_packets, received_packets=delta.rx_packets)


def run(spec: TrainSpec, emit: Emit = _print) -> int:
    """Train as ``spec`` says; every step and the final report go to ``emit`` (JSON lines on
    stdout by default; tests run the ``local`` reference in their own process)."""
    import torch
    import torch.nn.functional as F

    if spec.mode.startswith("allreduce"):
        return run_allreduce(spec, emit)
    torch.set_num_threads(1)
    data = batches(spec)
    xt, yt = data.test()
    model = build_model(spec)
    params = sum(p.numel() for p in model.parameters())
    transient = 0  # FSDP: all-gathered layers on top of the shards
    ranks = range(spec.world) if spec.mode == "local" else range(spec.rank, spec.rank + 1)
    hook: Any = None
    cpu_per_step: CpuPerStep | None = None
    closers: list[Any] = []
    peak_tensors = 0
    between = 0
    try:
        if spec.mode == "luwu":
            from innet.host.luwu.worker import LuwuWorker
            from innet.host.agent.aggregator import Timing
            from innet.host.luwu.model_in_network import ModelInNetwork

            if spec.plan is None:
                raise ValueError(f"TrainSpec of rank {spec.rank}: mode luwu needs a plan, got null")
            worker = LuwuWorker(spec.plan, spec.rank, agent_transport(spec), Timing(chunk_deadline=spec.chunk_deadline),
                                pull_transport=spec.pull_transport).start()
            closers.append(worker.close)
            mnet = ModelInNetwork(model, worker, overlap=spec.overlap, pull_timeout=spec.chunk_deadline * 3)
            net, opt = model, None
        else:
            net, opt = model, None
            if spec.mode in DISTRIBUTED:
                import torch.distributed as dist
                from datetime import timedelta

                from innet.testbed.core.gloo import rendezvous_store

                store = rendezvous_store(spec.rank, spec.world, spec.master[0], spec.master[1], timedelta(seconds=60))
                dist.init_process_group("gloo", store=store, rank=spec.rank, world_size=spec.world,
                                        timeout=timedelta(seconds=60))
                closers.append(dist.destroy_process_group)
                if spec.mode.startswith("fsdp"):
                    transient = 2 * _largest_layer_bytes(model)
                    _fsdp(model, offload=spec.mode == "fsdp-offload")
                else:
                    net = torch.nn.parallel.DistributedDataParallel(model)
                if spec.mode == "ddp-innet":
                    from innet.host.pytorch import register_innet_hook
                    from innet.host.agent.agent import Agent, AgentConfig
                    from innet.host.agent.aggregator import JobConfig, Timing

                    agent = _agent(spec)
                    closers.append(agent.close)
                    hook = register_innet_hook(net, agent)  # the one line that switches DDP to innet
            opt = torch.optim.Adam(model.parameters(), lr=spec.lr)
        times: list[float] = []
        waits: list[float] = []
        link_start = link_end = None
        cpu_start = None
        agent_of = hook.agent if hook is not None else (worker.agents if spec.mode == "luwu" else None)
        for s in range(spec.steps):
            if s == min(spec.warmup, spec.steps - 1):
                link_start = _link(spec)
                cpu_start = _cpu(agent_of)
            xb, yb = data.train(s, ranks)
            waited = worker.stats.wait_seconds if spec.mode == "luwu" else 0.0
            start = time.perf_counter()
            if opt is not None:
                opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(net(xb), yb)
            loss.backward()
            if opt is not None:
                peak_tensors = max(peak_tensors, _tensor_bytes(model, opt))
                opt.step()
                peak_tensors = max(peak_tensors, _tensor_bytes(model, opt))
            else:
                mnet.step()
                between = max(between, mnet.resident_bytes)
            elapsed = time.perf_counter() - start
            times.append(elapsed)
            if s == spec.steps - 1:
                link_end = _link(spec)
                cpu_per_step = _cpu_report(cpu_start, agent_of, spec.steps - min(spec.warmup, spec.steps - 1))
            if spec.mode == "luwu":  # of it, forward blocked waiting for pulls (the rest is compute)
                waits.append(worker.stats.wait_seconds - waited)
            emit(StepReport(s, float(loss.item()), elapsed, waits[-1] if spec.mode == "luwu" else None).to_json())
        with torch.no_grad():
            accuracy = float((net(xt).argmax(dim=1) == yt).float().mean().item())
        final = TrainerFinal(mode=spec.mode, rank=spec.rank, accuracy=accuracy, rss_bytes=_rss(),
                             rss_peak_bytes=_rss_peak(), step_seconds=times, params=params,
                             tensor_bytes_peak=peak_tensors + transient, link=_link_report(spec, link_start, link_end),
                             cpu_per_step=cpu_per_step)
        if spec.mode == "luwu":
            st = worker.stats
            pull_last = worker.pull_agent.last if worker.pull_agent is not worker.agent else None
            final = replace(final, tensor_bytes_peak=mnet.peak_resident_bytes, tensor_bytes_between_steps=between,
                            comm=LuwuComm(push_seconds=st.push_seconds, pull_seconds=st.pull_seconds,
                                          wait_seconds=st.wait_seconds, saturated=st.saturated),
                            step_wait_seconds=waits, agent_stats=worker.agent_stats(),
                            pull_agent_stats=pull_last.stats if pull_last is not None else None)
        if hook is not None:
            final = replace(final, comm=HookComm(buckets=hook.buckets, seconds=hook.seconds, saturated=hook.saturated,
                                                 stage_seconds=hook.stage_seconds, agent_seconds=hook.agent_seconds),
                            agent_stats=hook.agent.last.stats if hook.agent.last else {})
        emit(final.to_json())
        if spec.mode in DISTRIBUTED:
            import torch.distributed as dist

            # gloo's barrier first waits for every collective still queued on the group (FSDP2
            # may have one in flight after the accuracy pass). Destroying the group with one
            # pending aborted the process ("terminate called without an active exception") in
            # about one FSDP run in twelve.
            dist.barrier()
    finally:
        for close in reversed(closers):
            close()
    return 0


def _run_reporting(spec: TrainSpec) -> int:
    if spec.mode not in MODES:
        print(f"luwu_train: mode {spec.mode!r} is not one of {', '.join(MODES)}", file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        code = run(spec)
    except Exception as error:  # one line, the orchestrator shows it with the log
        # when (CLOCK_MONOTONIC, one clock for every process of the machine): the failure test
        # measures detection, not the interpreter's exit after it
        _print({"failed": type(error).__name__, "monotonic": time.monotonic()})
        print(f"luwu_train rank {spec.rank} ({spec.mode}): {type(error).__name__}: {error}", file=sys.stderr,
              flush=True)
        return 3
    if spec.mode in DISTRIBUTED:
        _exit_skipping_native_destructors(code)
    return code


def _exit_skipping_native_destructors(code: int) -> None:
    """End a distributed worker without running C++ static destructors.

    Every result is printed and every group and agent is closed by now, but torch's gloo and
    FSDP offload keep native threads whose destructors, run at interpreter exit, can abort the
    process ("terminate called without an active exception", SIGABRT) after a run that
    succeeded, turning a good run into a failed rank. Nothing of the run is left to lose.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(TrainSpec, _run_reporting, argv, MODULE)


if __name__ == "__main__":
    sys.exit(main())
