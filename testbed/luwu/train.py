"""One training process of the PyTorch runs: an MLP on scikit-learn's digits, four ways.

    python -m innet.testbed.luwu.train '<TrainSpec JSON>'

- ``local``: one process, torch Adam on the union of the N workers' batches (the reference);
- ``ddp-gloo``: ``DistributedDataParallel`` (gloo allreduce) + torch Adam, rank ``rank`` of N;
- ``ddp-innet``: the same with ``register_innet_hook`` (the one changed line): buckets are
  summed by the switch through this worker's agent;
- ``luwu``: ``ModelInNetwork`` against the optimizer node(s) (``overlap`` False: push after
  backward and pull before forward, serialized; the baseline of the overlap).

Worker ``r`` of N trains on samples ``[s*B*N + r*B, s*B*N + (r+1)*B)`` (mod the training set)
at step ``s``, so the union is what ``local`` trains on. One JSON line per step
(``{"step", "loss", "seconds"}``) and a final line (``{"final": true, "accuracy", ...}``)
with memory: RSS, and tensor bytes (parameters, gradients, optimizer state) at their peak;
on an error, ``{"failed": <exception type>, "monotonic": <time.monotonic()>}`` and exit 3.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence
from innet.plans import JsonPlan, worker_main

MODULE = __name__
MODES = ("local", "ddp-gloo", "ddp-innet", "luwu")


@dataclass(frozen=True)
class TrainSpec(JsonPlan):
    mode: str
    rank: int = 0
    world: int = 1
    steps: int = 60
    batch: int = 32
    lr: float = 0.003
    hidden: tuple[int, ...] = (128, 64)
    seed: int = 0
    transport: dict[str, Any] = field(default_factory=dict)
    job: int = 1
    window: int = 64
    k: int = 64
    epoch: int = 0
    plan: dict[str, Any] | None = None
    """LuwuPlan as a dict (``luwu``)."""
    master: tuple[str, int] = ("127.0.0.1", 0)
    overlap: bool = True
    chunk_deadline: float = 20.0



def build_model(spec: TrainSpec) -> Any:
    import torch

    torch.manual_seed(spec.seed)
    sizes = (64, *spec.hidden, 10)
    layers: list[Any] = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def _rss() -> int:
    from innet.host.luwu.node import rss_bytes

    return rss_bytes()


def minibatch(spec: TrainSpec, x: Any, y: Any, step: int, ranks: range) -> tuple[Any, Any]:
    import torch

    idx = torch.cat([torch.arange(step * spec.batch * spec.world + r * spec.batch,
                                  step * spec.batch * spec.world + (r + 1) * spec.batch) for r in ranks])
    idx = idx % x.shape[0]
    return x[idx], y[idx]


def _tensor_bytes(model: Any, opt: Any | None) -> int:
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    total += sum(p.grad.numel() * p.grad.element_size() for p in model.parameters() if p.grad is not None)
    if opt is not None:
        for state in opt.state.values():
            total += sum(v.numel() * v.element_size() for v in state.values() if hasattr(v, "numel"))
    return int(total)


def _print(doc: dict[str, Any]) -> None:
    print(json.dumps(doc), flush=True)


def run(spec: TrainSpec, emit: Callable[[dict[str, Any]], None] = _print) -> int:
    """Train as ``spec`` says; every step and the final report go to ``emit`` (JSON lines on
    stdout by default; tests run the ``local`` reference in their own process)."""
    import torch
    import torch.nn.functional as F

    from innet.host.training.model import load_digits_dataset

    torch.set_num_threads(1)
    data = load_digits_dataset(seed=spec.seed)
    x, y = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)
    xt, yt = torch.from_numpy(data.x_test), torch.from_numpy(data.y_test)
    model = build_model(spec)
    ranks = range(spec.world) if spec.mode == "local" else range(spec.rank, spec.rank + 1)
    extra: dict[str, Any] = {}
    closers: list[Any] = []
    peak_tensors = 0
    between = 0
    try:
        if spec.mode == "luwu":
            from innet.host.luwu.plan import LuwuPlan
            from innet.host.luwu.worker import LuwuWorker
            from innet.host.agent.aggregator import Timing
            from innet.host.luwu.model_in_network import ModelInNetwork
            from innet.host.agent.transport import transport_config

            assert spec.plan is not None
            plan = LuwuPlan.from_dict(spec.plan)
            worker = LuwuWorker(plan, spec.rank, transport_config(spec.transport),
                                Timing(chunk_deadline=spec.chunk_deadline)).start()
            closers.append(worker.close)
            mnet = ModelInNetwork(model, worker, overlap=spec.overlap, pull_timeout=spec.chunk_deadline * 3)
            net, opt = model, None
        else:
            net, opt = model, None
            if spec.mode.startswith("ddp"):
                import torch.distributed as dist
                from datetime import timedelta

                from innet.testbed.core.gloo import rendezvous_store

                store = rendezvous_store(spec.rank, spec.world, spec.master[0], spec.master[1], timedelta(seconds=60))
                dist.init_process_group("gloo", store=store, rank=spec.rank, world_size=spec.world,
                                        timeout=timedelta(seconds=60))
                closers.append(dist.destroy_process_group)
                net = torch.nn.parallel.DistributedDataParallel(model)
                if spec.mode == "ddp-innet":
                    from innet.host.agent.agent import Agent, AgentConfig
                    from innet.host.agent.aggregator import JobConfig, Timing
                    from innet.host.pytorch import register_innet_hook
                    from innet.host.agent.transport import transport_config

                    agent = Agent(AgentConfig(JobConfig(spec.job, spec.rank, spec.world, spec.window, spec.k,
                                                        epoch=spec.epoch), transport_config(spec.transport),
                                              timing=Timing(chunk_deadline=spec.chunk_deadline))).start()
                    closers.append(agent.close)
                    hook = register_innet_hook(net, agent)  # the one line that switches DDP to innet
                    extra["hook"] = hook
            opt = torch.optim.Adam(model.parameters(), lr=spec.lr)
        times: list[float] = []
        waits: list[float] = []
        for s in range(spec.steps):
            xb, yb = minibatch(spec, x, y, s, ranks)
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
            step_doc = {"step": s, "loss": float(loss.item()), "seconds": elapsed}
            if spec.mode == "luwu":  # of it, forward blocked waiting for pulls (the rest is compute)
                waits.append(worker.stats.wait_seconds - waited)
                step_doc["wait_seconds"] = waits[-1]
            emit(step_doc)
        with torch.no_grad():
            accuracy = float((net(xt).argmax(dim=1) == yt).float().mean().item())
        final: dict[str, Any] = {"final": True, "mode": spec.mode, "rank": spec.rank, "accuracy": accuracy,
                                 "rss_bytes": _rss(), "step_seconds": times,
                                 "params": sum(p.numel() for p in build_model(spec).parameters())}
        if spec.mode == "luwu":
            final["tensor_bytes_peak"] = mnet.peak_resident_bytes
            final["tensor_bytes_between_steps"] = between
            st = worker.stats
            final["comm"] = {"push_seconds": st.push_seconds, "pull_seconds": st.pull_seconds,
                             "wait_seconds": st.wait_seconds, "saturated": st.saturated}
            final["step_wait_seconds"] = waits
            final["agent_stats"] = worker.agent.last.stats if worker.agent.last else {}
        else:
            final["tensor_bytes_peak"] = peak_tensors
        if "hook" in extra:
            h = extra["hook"]
            final["comm"] = {"buckets": h.buckets, "seconds": h.seconds, "saturated": h.saturated}
            final["agent_stats"] = h.agent.last.stats if h.agent.last else {}
        emit(final)
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
        return run(spec)
    except Exception as error:  # one line, the orchestrator shows it with the log
        # when (CLOCK_MONOTONIC, one clock for every process of the machine): the failure test
        # measures detection, not the interpreter's exit after it
        _print({"failed": type(error).__name__, "monotonic": time.monotonic()})
        print(f"luwu_train rank {spec.rank} ({spec.mode}): {type(error).__name__}: {error}", file=sys.stderr,
              flush=True)
        return 3


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(TrainSpec, _run_reporting, argv, MODULE)


if __name__ == "__main__":
    sys.exit(main())
