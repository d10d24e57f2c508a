"""One pipeline stage as a process: ``python -m innet.host.geo.stage_process '<StageJob JSON>'``.

Every site runs one per stage replica. The process builds the model from its spec and
initialises only its own nodes' parameters from the shared seed, regenerates the same
batches as every other site, listens for the previous stage (printing
``{"event": "listening", "port": P}`` first), connects to the next, probes the link (the first
stage prints ``probed`` once every link of the chain is, and waits for ``start_file``), trains,
and prints JSON lines: ``step`` (loss and training wall-clock, last stage), ``eval``
(test accuracy, last stage; evaluation time is excluded from the clock) and ``done``
(its measurements). With ``dp`` set, the stage's parameter gradients are summed by the
site's innet switch through a host agent (data parallel inside the site) before SGD.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from innet.host.geo.channel import Channel, ChannelError, LinkShape, ShapedChannel, TcpChannel
from innet.host.geo.codec import CodecError
from innet.host.geo.compress import CompressionConfig
from innet.host.geo.data import Digits, LmTask, TextTask, accuracy, cross_entropy
from innet.host.geo.graph import Graph, GraphError, ParamStore, gpt, gpt2, mlp, resnet
from innet.host.geo.rad import RadError, Reducer, StageRunner, merge_link_states
from innet.host.geo.specs import (DigitsSpec, DpSpec, Gpt2Spec, GptSpec, LmSpec, MlpSpec, ModelSpec, ResnetSpec,
                                  TaskSpec, TextSpec, TorchSpec)
from innet.host.geo.stages import Sgd, Stage, partition
from innet.plans import JsonPlan, worker_main

WORKER_MODULE = __name__


@dataclass(frozen=True)
class StageJob(JsonPlan):
    """Everything one stage process needs (JSON on its command line)."""

    model: ModelSpec
    """The model every stage builds (each initialises only its own nodes)."""
    task: TaskSpec
    cuts: tuple[int, ...]
    """Partition of the model (indices where stages 1.. start)."""
    index: int
    """This stage."""
    steps: int
    batch: int = 32
    microbatches: int = 1
    seed: int = 0
    """Seed of parameters and batches (the same on every site)."""
    data_seed: int | None = None
    """Seed of the batches when it differs from ``seed`` (data-parallel replicas read different data)."""
    task_seed: int = 0
    """Seed of the task itself (the generated language or text, the digits' split): kept apart
    from ``seed`` so runs trained from different seeds are tested on one task."""
    dtype: str = "float32"
    lr: float = 0.1
    momentum: float = 0.0
    listen: tuple[str, int] = ("127.0.0.1", 0)
    """Where to listen for the previous stage (stages > 0)."""
    next_address: tuple[str, int] | None = None
    """The next stage's listening address (all stages but the last)."""
    shape_next: LinkShape | None = None
    """LinkShape of this stage's sends to the next (WAN emulation), or None."""
    shape_prev: LinkShape | None = None
    compress_next: CompressionConfig | None = None
    """CompressionConfig of forward messages to the next stage."""
    compress_prev: CompressionConfig | None = None
    """CompressionConfig of backward messages to the previous stage."""
    probe: bool = True
    eval_every: int = 0
    """Evaluate test accuracy every N steps (0: only after the last)."""
    params_out: str | None = None
    """Write the stage's final parameters and its SGD momentum to this .npz."""
    params_in: tuple[str, ...] = ()
    """.npz files (other stages' ``params_out``) to start from: this stage takes the parameters and
    the momentum of its own nodes from them (a pipeline re-planned at a step boundary)."""
    start_file: str | None = None
    """A file the coordinator creates once every pipeline has probed its links: the first stage
    reports ``probed`` and waits for it before training (``launch``: pipelines probe one at a
    time). None: train right after the probe."""
    stop_file: str | None = None
    """A file the coordinator may write a step number into: the stage stops before training that
    step (every stage of the pipeline reads the same file, so they stop at the same boundary)."""
    skip_steps: int = 0
    """Batches of this many steps to skip first: a re-planned pipeline continues the same data
    order where the old one stopped."""
    dp: DpSpec | None = None
    """Data parallel inside the site (``GeoTestbed.dp_agent`` writes its agent)."""
    timeout: float = 120.0



def build_model(spec: ModelSpec) -> Graph:
    """The model graph of ``spec``."""
    if isinstance(spec, MlpSpec):
        return mlp(spec.sizes)
    if isinstance(spec, GptSpec):
        return gpt(spec.vocab, spec.d, spec.heads, spec.layers, spec.seq)
    if isinstance(spec, Gpt2Spec):
        return gpt2(spec.vocab, spec.width, spec.layers, spec.seq)
    if isinstance(spec, ResnetSpec):
        return resnet(spec.widths)
    if isinstance(spec, TorchSpec):  # a torch.nn.Module from a factory, traced with torch.fx (innet.host.geo.torchfx)
        from innet.host.geo.torchfx import from_torch, load_factory

        module = load_factory(spec.factory, spec.kwargs, spec.seed)
        return from_torch(module, name=spec.factory, target=spec.target, numpy_nodes=spec.numpy_nodes)
    raise GraphError(f"model spec {type(spec).__name__}: expected an MlpSpec, GptSpec, Gpt2Spec, ResnetSpec "
                     "or TorchSpec")


def _wait_for(path: Path, timeout: float) -> None:
    """Until ``path`` exists (the coordinator's start signal); GraphError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise GraphError(f"stage 0: the start file {path} did not appear within {timeout:g} s")
        time.sleep(0.01)


def build_task(spec: TaskSpec, seed: int) -> Digits | LmTask | TextTask:
    """The data of ``spec``, its batches drawn from ``seed``."""
    if isinstance(spec, DigitsSpec):
        return Digits.load(seed)
    if isinstance(spec, LmSpec):
        return LmTask.make(vocab=spec.vocab, seq=spec.seq, seed=seed)
    if isinstance(spec, TextSpec):
        return TextTask.make(seq=spec.seq, seed=seed)
    raise GraphError(f"task spec {type(spec).__name__}: expected a DigitsSpec, LmSpec or TextSpec")


def _cast(feeds: dict[str, Any], dtype: np.dtype) -> dict[str, Any]:
    return {k: v.astype(dtype) if np.issubdtype(v.dtype, np.floating) else v for k, v in feeds.items()}


def flatten(grads: ParamStore) -> tuple[np.ndarray, list[tuple[str, str, tuple[int, ...]]]]:
    """One float32 vector of every gradient (sorted by node and name) and how to undo it."""
    layout = [(n, k, grads[n][k].shape) for n in sorted(grads) for k in sorted(grads[n])]
    vec = np.concatenate([grads[n][k].reshape(-1).astype(np.float32) for n, k, _ in layout]) if layout else \
        np.zeros(0, np.float32)
    return vec, layout


def unflatten(vec: np.ndarray, layout: Sequence[tuple[str, str, tuple[int, ...]]]) -> ParamStore:
    out: ParamStore = {}
    offset = 0
    for n, k, shape in layout:
        size = int(np.prod(shape))
        out.setdefault(n, {})[k] = vec[offset:offset + size].reshape(shape)
        offset += size
    return out


def agent_config(dp: DpSpec, sum_bound: float) -> Any:
    """The host agent's config of a stage job's ``dp`` (the site testbed writes its agent)."""
    from innet.host.agent.agent import AgentConfig
    from innet.host.agent.aggregator import JobConfig, Timing

    a = dp.agent
    return AgentConfig(JobConfig(job=a.job, rank=a.rank, num_workers=a.num_workers, window=a.window,
                                 k=a.k, epoch=a.epoch), a.transport, sum_bound=sum_bound,
                       timing=Timing(chunk_deadline=a.chunk_deadline))


DP_SUM_BOUND = 8.0
"""Bound of one replica's gradient values when a ``dp`` spec sets none."""


def ina_reducer(dp: DpSpec) -> tuple[Reducer, Any]:
    """A reducer that averages gradients over the site's replicas through the site switch
    (``sum`` job via the host agent); and the agent, for the caller to close."""
    from innet.host.agent.agent import Agent

    replicas = dp.replicas
    bound = dp.sum_bound if dp.sum_bound is not None else DP_SUM_BOUND
    agent = Agent(agent_config(dp, bound * replicas), capacity=max(1, dp.agent.elements)).start()

    def reduce(grads: ParamStore) -> ParamStore:
        vec, layout = flatten(grads)
        total = agent.allreduce(vec)
        return unflatten(total / replicas, layout)

    return reduce, agent


def _emit(**record: Any) -> None:
    print(json.dumps(record), flush=True)


def run(job: StageJob) -> int:
    srv = None
    if job.index > 0:  # listen first: the stage before this one is started only once it knows the port
        srv = TcpChannel.listen(*job.listen)
        _emit(event="listening", port=srv.getsockname()[1])
    graph = build_model(job.model)
    plans = partition(graph, job.cuts)
    if not 0 <= job.index < len(plans):
        raise GraphError(f"stage index {job.index}: the partition has {len(plans)} stages")
    plan = plans[job.index]
    dtype = np.dtype(job.dtype)
    params = {n: {k: v.astype(dtype) for k, v in p.items()}
              for n, p in graph.init_params(job.seed, plan.nodes).items()}
    velocity: dict[str, dict[str, Any]] = {}
    for path in job.params_in:
        for n, p in load_params(Path(path)).items():
            if n in params:
                params[n] = {k: v.astype(dtype) for k, v in p.items()}
        for n, p in load_params(Path(path), MOMENTUM).items():
            if n in params:
                velocity[n] = {k: v.astype(dtype) for k, v in p.items()}
    carried = merge_link_states(load_link_state(Path(path), job.data_seed) for path in job.params_in)
    task = build_task(job.task, job.task_seed)
    batches: Iterator[list[dict[str, Any]]] = task.batches(job.batch, job.microbatches,
                                                                   job.seed if job.data_seed is None else job.data_seed)
    for _ in range(job.skip_steps):
        next(batches)
    prev: Channel | None = None
    nxt: Channel | None = None
    agent = None
    try:
        if srv is not None:
            prev = TcpChannel.accept(srv, job.timeout, name=f"link {job.index - 1}-{job.index}")
            if job.shape_prev is not None:
                prev = ShapedChannel(prev, job.shape_prev)
        if job.index < len(plans) - 1:
            if job.next_address is None:
                raise GraphError(f"stage {job.index}: next_address is required for every stage but the last")
            nxt = TcpChannel.connect(job.next_address, job.timeout, name=f"link {job.index}-{job.index + 1}")
            if job.shape_next is not None:
                nxt = ShapedChannel(nxt, job.shape_next)
        reducer = None
        if job.dp is not None:
            reducer, agent = ina_reducer(job.dp)
        runner = StageRunner(Stage(graph, plan, params), prev, nxt, Sgd(job.lr, job.momentum),
                             job.compress_next, job.compress_prev,
                             reducer=reducer, timeout=job.timeout)
        runner.opt.velocity.update(velocity)
        runner.restore_link_state(carried)  # a re-plan: residuals, reference rows, held ratio
        if job.probe:
            runner.probe()
            if job.index == 0:
                _emit(event="probed")
                if job.start_file is not None:
                    _wait_for(Path(job.start_file), job.timeout)
        base = {"next": nxt.sent_bytes if nxt else 0, "prev": prev.sent_bytes if prev else 0}  # probes excluded
        test = _cast(task.test_feeds(), dtype)
        clock = 0.0
        for step in range(job.steps):
            if job.stop_file is not None and step >= _stop_step(Path(job.stop_file)):
                break
            start = time.perf_counter()
            computed = runner.stats.compute_s
            # numbered on from the steps before a re-plan, so a warm-up is not sent twice
            loss = runner.step(job.skip_steps + step, [_cast(f, dtype) for f in next(batches)])
            clock += time.perf_counter() - start
            # this stage's compute in the step (forward + backward of every microbatch): what a
            # slower device (a tighter CPU quota) changes, seen by the coordinator per step
            _emit(event="compute", stage=job.index, step=step, s=runner.stats.compute_s - computed)
            if loss is not None:
                _emit(event="step", step=step, loss=loss, t=clock)
            last = step == job.steps - 1
            if (job.eval_every and (step + 1) % job.eval_every == 0) or last:
                before = nxt.sent_bytes if nxt else 0
                logits = runner.evaluate(step, test)
                base["next"] += (nxt.sent_bytes if nxt else 0) - before  # evaluation is not training traffic
                if logits is not None:
                    _emit(event="eval", step=step, t=clock, accuracy=accuracy(logits, task.test_labels),
                          loss=cross_entropy(logits, task.test_labels))
        for link in (nxt, prev):
            if isinstance(link, ShapedChannel):
                link.flush(job.timeout)
        if job.params_out:
            arrays: dict[str, Any] = {f"{n}/{k}": v for n, p in params.items() for k, v in p.items()}
            arrays.update({f"{MOMENTUM}{n}/{k}": v for n, p in runner.opt.velocity.items() for k, v in p.items()})
            arrays.update({f"{LINK}{k}": v for k, v in runner.link_state().items()})
            arrays[LINK_SEED] = np.asarray(-1 if job.data_seed is None else job.data_seed)
            np.savez(job.params_out, **arrays)
        s = runner.stats
        _emit(event="done", stage=job.index, compute_s=s.compute_s, microbatches=s.microbatches,
              reduce_s=s.reduce_s, bandwidth_next_bps=s.bandwidth_next_bps,
              delay_next_s=runner.meter_next.delay_s if nxt is not None and job.probe else None,
              mean_ratio_next=float(np.mean(s.ratios_next)) if s.ratios_next else None,
              mean_ratio_prev=float(np.mean(s.ratios_prev)) if s.ratios_prev else None,
              ratios_next=[round(r, 4) for r in s.ratios_next],
              measured_rate_next_bps=s.rate_next_bps[-1] if s.rate_next_bps else None,
              rates_next_bps=[round(r) for r in s.rate_next_bps],
              codecs_next=s.codecs_next, codecs_prev=s.codecs_prev,
              bytes_next=s.bytes_next, bytes_prev=s.bytes_prev, sizes_next=s.sizes_next,
              sent_next=(nxt.sent_bytes if nxt else 0) - base["next"],
              sent_prev=(prev.sent_bytes if prev else 0) - base["prev"])
        return 0
    finally:
        for link in (nxt, prev):
            if link is not None:
                link.close()
        if srv is not None:
            srv.close()
        if agent is not None:
            agent.close()


def _stop_step(path: Path) -> int:
    """The step a coordinator asked to stop before (no file yet: never)."""
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return 1 << 62


MOMENTUM = "momentum:"
"""Prefix of the SGD momentum's arrays in a ``params_out`` file."""


LINK = "link:"
"""Prefix of the compressors' state (``StageRunner.link_state``) in a ``params_out`` file."""
LINK_SEED = "link-seed"
"""The data seed of the pipeline that wrote the link state: replicas' links differ."""


def load_link_state(path: Path, data_seed: int | None) -> dict[str, Any]:
    """The compressors' state in a ``params_out`` file written by the pipeline of ``data_seed``
    (another replica's: none)."""
    with np.load(path) as z:
        if LINK_SEED not in z.files or int(z[LINK_SEED]) != (-1 if data_seed is None else data_seed):
            return {}
        return {key[len(LINK):]: z[key] for key in z.files if key.startswith(LINK)}


def load_params(path: Path, prefix: str = "") -> ParamStore:
    """The parameters in a ``params_out`` file, or with ``prefix=MOMENTUM`` the momentum."""
    out: ParamStore = {}
    with np.load(path) as z:
        for key in z.files:
            if key.startswith(LINK) or key == LINK_SEED:
                continue
            if key.startswith(MOMENTUM) != bool(prefix):
                continue
            n, k = key[len(prefix):].split("/", 1)
            out.setdefault(n, {})[k] = z[key]
    return out


def _run_reporting(job: StageJob) -> int:
    try:
        return run(job)
    except (ChannelError, RadError, GraphError, CodecError, ValueError) as error:
        print(f"geo worker stage {job.index}: {error}", file=sys.stderr, flush=True)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(StageJob, _run_reporting, argv, WORKER_MODULE)


if __name__ == "__main__":
    sys.exit(main())
