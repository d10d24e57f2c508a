"""gloo DDP and DDP with innet's comm hook side by side: the averaged gradients of every step.

    grads = compare_gradients(tb, workers=2, steps=5, out_dir=tmp)   # a loopback or Mininet testbed

Each of N rank processes (``python -m innet.testbed.luwu.hook_check '<GradcheckSpec JSON>'``)
joins one gloo process group and holds three copies of the same MLP: ``DistributedDataParallel``
with gloo's allreduce, ``DistributedDataParallel`` with ``register_innet_hook`` (its buckets
summed by the testbed's switch through the rank's agent), and the plain model (its local
gradient, from which the quantization bound is computed). Every step all three see the same
batch and the same parameters (after gloo's Adam step the other two copy its parameters), so
the two averages differ only by how they were reduced. Each rank saves ``rank<r>.npz`` with
arrays ``gloo``, ``innet`` and ``local`` of shape (steps, parameters).
"""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence
from innet.host.agent.transport import TransportConfig
from innet.plans import JsonPlan, worker_main

MODULE = __name__


@dataclass(frozen=True)
class GradcheckSpec(JsonPlan):
    rank: int
    world: int
    out: str
    """Directory for ``rank<r>.npz``."""
    steps: int = 5
    batch: int = 32
    hidden: tuple[int, ...] = (32,)
    lr: float = 0.01
    transport: TransportConfig | None = None
    """The rank's agent transport as the testbed gives it (``Testbed.host_transport``), carried in
    this plan's JSON to the rank process."""
    job: int = 1
    window: int = 64
    k: int = 64
    epoch: int = 0
    master: tuple[str, int] = ("127.0.0.1", 0)
    chunk_deadline: float = 10.0


@dataclass(frozen=True)
class GradientSeries:
    """One rank's averaged gradients of every step, three ways (module docstring): numpy
    arrays of shape (steps, parameters)."""

    gloo: Any
    """DDP's with gloo's allreduce."""
    innet: Any
    """DDP's with innet's comm hook (the switch's quantized sum)."""
    local: Any
    """The rank's own gradient, before any averaging (it bounds the quantization error)."""

    def save(self, path: Path) -> None:
        """As ``rank<r>.npz``: arrays ``gloo``, ``innet`` and ``local``."""
        import numpy as np

        np.savez(path, gloo=self.gloo, innet=self.innet, local=self.local)

    @classmethod
    def load(cls, path: Path) -> GradientSeries:
        import numpy as np

        with np.load(path) as arrays:
            return cls(gloo=arrays["gloo"], innet=arrays["innet"], local=arrays["local"])


def _flat_grads(model: Any) -> Any:
    import torch

    return torch.cat([p.grad.detach().reshape(-1) for p in model.parameters()]).numpy().copy()


def gradient_series(train: Any, agent: Any, steps: int, lr: float) -> GradientSeries:
    """In a joined gloo process group, rank ``train.rank``'s averaged gradients of ``steps``
    steps three ways (module docstring); ``agent``: a started agent of a sum job of the group's ranks."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel

    from innet.host.pytorch import register_innet_hook
    from innet.testbed.luwu.train import batches, build_model

    data = batches(train)
    base = build_model(train)
    local, innet_model = copy.deepcopy(base), copy.deepcopy(base)
    gloo = DistributedDataParallel(base)
    innet = DistributedDataParallel(innet_model)
    register_innet_hook(innet, agent)
    opt = torch.optim.Adam(base.parameters(), lr=lr)
    out: dict[str, list[Any]] = {"gloo": [], "innet": [], "local": []}
    for s in range(steps):
        xb, yb = data.train(s, range(train.rank, train.rank + 1))
        for name, net in (("gloo", gloo), ("innet", innet), ("local", local)):
            net.zero_grad(set_to_none=True)
            F.cross_entropy(net(xb), yb).backward()
        out["gloo"].append(_flat_grads(base))
        out["innet"].append(_flat_grads(innet_model))
        out["local"].append(_flat_grads(local))
        opt.step()
        with torch.no_grad():
            for src, a, b in zip(base.parameters(), innet_model.parameters(), local.parameters()):
                a.copy_(src)
                b.copy_(src)
    return GradientSeries(**{name: np.stack(values) for name, values in out.items()})


def run(spec: GradcheckSpec) -> int:
    """Body of one rank (see module docstring)."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    from innet.host.agent.agent import Agent, AgentConfig
    from innet.host.agent.aggregator import JobConfig, Timing
    from innet.testbed.core.gloo import rendezvous_store
    from innet.testbed.luwu.train import TrainSpec

    torch.set_num_threads(1)
    train = TrainSpec(mode="ddp-gloo", rank=spec.rank, world=spec.world, batch=spec.batch, hidden=spec.hidden)
    if spec.transport is None:
        raise ValueError(f"GradcheckSpec of rank {spec.rank}: transport is null; the innet hook needs an agent")
    store = rendezvous_store(spec.rank, spec.world, spec.master[0], spec.master[1], timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=spec.rank, world_size=spec.world,
                            timeout=timedelta(seconds=60))
    agent = Agent(AgentConfig(JobConfig(spec.job, spec.rank, spec.world, spec.window, spec.k, epoch=spec.epoch),
                              spec.transport,
                              timing=Timing(chunk_deadline=spec.chunk_deadline))).start()
    try:
        series = gradient_series(train, agent, spec.steps, spec.lr)
        series.save(Path(spec.out) / f"rank{spec.rank}.npz")
        dist.barrier()
    finally:
        agent.close()
        dist.destroy_process_group()
    return 0


def compare_gradients(tb: Any, workers: int, steps: int, out_dir: Path, timeout: float = 60.0) -> list[GradientSeries]:
    """Run the N ranks on ``tb``'s first ``workers`` hosts over a sum job of them; per rank its
    series as saved in its ``rank<r>.npz``. Raises ``TestbedError`` with the log of a rank that failed."""
    from innet.testbed.core.testbed import TestbedError

    hosts = tb.worker_hosts()[:workers]
    job = tb.replace_job(mode="sum", hosts=hosts)
    epoch = tb.controller.attach(job.job_id)
    port = tb.free_port()
    out_dir.mkdir(parents=True, exist_ok=True)
    base = GradcheckSpec(rank=0, world=workers, out=str(out_dir), steps=steps, job=job.job_id,
                         window=job.slot_count, k=tb.options.k, epoch=epoch, master=(tb.gloo_master(), port))
    names = []
    try:
        for r, host in enumerate(hosts):
            name = f"gradcheck-{host}"
            spec = replace(base, rank=r, transport=tb.host_transport(host))
            tb.spawn_on(host, name, [sys.executable, "-m", MODULE, spec.to_json()],
                        env={"OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": tb.gloo_iface(host)})
            names.append(name)
        for name in names:
            popen = tb.procs.popens[name]
            try:
                code = popen.wait(timeout=timeout)
            except Exception:
                raise TestbedError(f"gradcheck: {name} did not finish within {timeout:g} s; log:\n"
                                   f"{tb.procs.log_tail(name)}") from None
            if code != 0:
                raise TestbedError(f"gradcheck: {name} exited {code}; log:\n{tb.procs.log_tail(name)}")
    finally:
        for name in names:
            tb.procs.stop(name)
            tb.procs.forget(name)
    return [GradientSeries.load(out_dir / f"rank{r}.npz") for r in range(workers)]


def _run_reporting(spec: GradcheckSpec) -> int:
    try:
        return run(spec)
    except Exception as error:  # one line; the orchestrator shows it with the log
        print(f"luwu_gradcheck rank {spec.rank}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        return 3


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(GradcheckSpec, _run_reporting, argv, MODULE)


if __name__ == "__main__":
    sys.exit(main())
