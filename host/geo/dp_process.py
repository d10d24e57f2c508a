"""Data parallel across sites, one process per site: ``python -m innet.host.geo.dp_process JOB``.

The process form of :func:`innet.host.geo.dataparallel.train`, so the data-parallel baseline
runs where the pipelines run: on Mininet each site's process is on the site's host and every
gradient crosses the WAN veths (kernel HTB rate, the switches' port delay), on loopback over
local TCP with the transport's shaper. Wiring, all-to-all: sites start last to first; every
site but the first listens and prints ``{"event": "listening", "port": P}``; site ``i`` connects
to every later site (their addresses are in its job) and says who it is, and accepts the ``i``
earlier ones. Site 0 prints ``step`` and ``eval`` records; every site prints ``done``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from innet.host.geo.channel import Channel, ChannelError, LinkShape, ShapedChannel, TcpChannel
from innet.host.geo.codec import CodecError, decode, encode
from innet.host.geo.data import accuracy, cross_entropy
from innet.host.geo.dataparallel import DataParallelError, check, evaluator, run_site
from innet.host.geo.graph import GraphError
from innet.host.geo.launch import LaunchError, Spawn, StageOutput, WorkerProc, local_spawn
from innet.host.geo.specs import ModelSpec, TaskSpec
from innet.host.geo.stage_process import build_model, build_task
from innet.host.geo.stages import Sgd
from innet.plans import JsonPlan, worker_main

DP_MODULE = __name__


@dataclass(frozen=True)
class DpJob(JsonPlan):
    """One data-parallel site (JSON on its command line)."""

    model: ModelSpec
    task: TaskSpec
    index: int
    sites: int
    steps: int
    batch: int = 32
    microbatches: int = 1
    seed: int = 0
    data_seed: int | None = None
    task_seed: int = 0
    """Seed of the task itself, kept apart from ``seed`` (as ``StageJob.task_seed``)."""
    lr: float = 0.1
    momentum: float = 0.0
    ratio: float = 1.0
    """Top-k ratio of the gradient sent (1.0: dense; below: error feedback)."""
    codec: str = "topk"
    """``topk`` (at ``ratio``) or ``int8`` (error feedback either way)."""
    listen: tuple[str, int] = ("127.0.0.1", 0)
    peers: tuple[tuple[str, int], ...] = ()
    """Addresses of sites ``index + 1 ..`` in order (the coordinator fills them in)."""
    shapes: tuple[LinkShape | None, ...] = ()
    """LinkShape of this site's sends to each site (by index; None or absent: not shaped)."""
    eval_every: int = 0
    timeout: float = 120.0


def _emit(**record: Any) -> None:
    print(json.dumps(record), flush=True)


def run(job: DpJob) -> int:
    check(job.sites, job.ratio)
    if job.codec not in ("topk", "int8"):
        raise DataParallelError(f"dp site {job.index}: gradient codec {job.codec!r}: expected 'topk' or 'int8'")
    graph = build_model(job.model)  # before listening: a bad job fails where the coordinator waits
    task = build_task(job.task, job.task_seed)
    srv = None
    if job.index > 0:
        srv = TcpChannel.listen(*job.listen)
        _emit(event="listening", port=srv.getsockname()[1])
    links: dict[int, Channel] = {}
    try:
        if len(job.peers) != job.sites - job.index - 1:
            raise DataParallelError(f"dp site {job.index}: {len(job.peers)} peer addresses for "
                                    f"{job.sites - job.index - 1} later sites")
        for j, address in enumerate(job.peers, start=job.index + 1):
            link = TcpChannel.connect(tuple(address), job.timeout, name=f"dp {job.index}-{j}")  # type: ignore[arg-type]
            link.send(encode(("hello", job.index), {}))
            links[j] = link
        for _ in range(job.index):
            assert srv is not None
            link = TcpChannel.accept(srv, job.timeout, name=f"dp {job.index}")
            tag, _tensors = decode(link.recv(job.timeout))
            if tag[0] != "hello" or not 0 <= int(tag[1]) < job.index or int(tag[1]) in links:
                raise DataParallelError(f"dp site {job.index}: unexpected greeting {tag}")
            links[int(tag[1])] = link
        for j in list(links):
            shape = job.shapes[j] if j < len(job.shapes) else None
            if shape is not None:
                links[j] = ShapedChannel(links[j], shape)
        batches = task.batches(job.batch, job.microbatches, job.seed if job.data_seed is None else job.data_seed)
        first = job.index == 0
        run_site(job.index, job.sites, graph, graph.init_params(job.seed), links, batches, job.steps,
                 Sgd(job.lr, job.momentum), job.ratio,
                 evaluator(graph, task.test_feeds(), task.test_labels,
                           lambda logits, labels: (accuracy(logits, labels), cross_entropy(logits, labels)))
                 if first else None,
                 job.eval_every, job.timeout,
                 (lambda step, t, loss: _emit(event="step", step=step, t=t, loss=loss)) if first else None,
                 (lambda step, t, m: _emit(event="eval", step=step, t=t, accuracy=m[0], loss=m[1])) if first else None,
                 codec=job.codec)
        for channel in links.values():
            if isinstance(channel, ShapedChannel):
                channel.flush(job.timeout)
        _emit(event="done", site=job.index, sent=sum(c.sent_bytes for c in links.values()))
        return 0
    finally:
        for channel in links.values():
            channel.close()
        if srv is not None:
            srv.close()


def launch_dp(jobs: Sequence[DpJob], spawn: Spawn = local_spawn, timeout: float = 300.0,
              on_record: Callable[[DpJob, dict[str, Any]], None] | None = None) -> list[StageOutput]:
    """Start every site (last to first, each told the later sites' addresses), wait for all;
    what each printed, in site order. Every process started here is ended in ``finally``."""
    deadline = time.monotonic() + timeout
    procs: list[WorkerProc] = []
    addresses: list[tuple[str, int]] = []
    try:
        for job in reversed(jobs):
            job = replace(job, peers=tuple(addresses))
            name = f"dp site {job.index}"
            hook = (lambda record, job=job: on_record(job, record)) if on_record is not None else None
            proc = WorkerProc(name, spawn(job, name, [sys.executable, "-m", DP_MODULE, job.to_json()]), hook)
            procs.insert(0, proc)
            if job.index > 0:
                port = proc.wait_port(max(1.0, deadline - time.monotonic()))
                addresses.insert(0, (job.listen[0], port))
        for proc in procs:
            proc.finish(deadline)
        return [StageOutput(i, tuple(proc.lines)) for i, proc in enumerate(procs)]
    finally:
        for proc in procs:
            proc.kill()


def _run_reporting(job: DpJob) -> int:
    try:
        return run(job)
    except (ChannelError, DataParallelError, GraphError, CodecError, ValueError) as error:
        print(f"geo dp site {job.index}: {error}", file=sys.stderr, flush=True)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(DpJob, _run_reporting, argv, DP_MODULE)


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["DpJob", "LaunchError", "launch_dp", "run"]
