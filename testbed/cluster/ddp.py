"""PyTorch DDP launched by ``torchrun`` across worker tasks, its gradients through the switch service.

A DDP script launched as ``torchrun --nnodes N --nproc-per-node 1 --rdzv-backend c10d
--rdzv-endpoint HOST:29400 script.py`` on N machines adds two lines to use innet::

    agent = innet_agent("switch")              # the switch service, found by its name
    register_innet_hook(ddp_model, agent)

:func:`innet_agent` resolves the switch service by name on the overlay, reads the ``sum`` job
the controller attached for ``WORLD_SIZE`` ranks there (a read-only P4Runtime session, TLS
keys from the Swarm secrets) and starts an agent for torchrun's ``RANK`` on that rank's switch
port. In the stack (``INNET_WORKLOAD=ddp``) the controller task also serves the rendezvous
store on :data:`RDZV_PORT`; each worker task runs ``torchrun`` with ``--local-addr`` set to its
overlay address, since rank 0's store for the process group is announced by that address and
a task's host name resolves on no other task.

``python -m innet.testbed.cluster.ddp`` is such a script: DDP with gloo's allreduce, DDP with
the innet hook and the plain model on the same batches and parameters every step
(:func:`innet.testbed.luwu.hook_check.gradient_series`), and for each step the largest
difference between the innet and the gloo average against the quantization bound (gloo's
float32 sum is exact up to 4 float32 epsilons of the largest gradient; innet rounds each
value to a multiple of 2**-f with N * B * 2**f <= 2**31 - 1, innet.wire.quantize).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from typing import Any, Sequence

RDZV_PORT = 29400
"""torchrun's c10d port on the controller task (``INNET_RDZV_PORT`` overrides it: :func:`rdzv_port`)."""
DONE_KEY = "innet_ddp_done"
STEPS_ENV = "INNET_TRAIN_STEPS"
"""Steps of the script (the stack's training steps)."""


def rdzv_port() -> int:
    return int(os.environ.get("INNET_RDZV_PORT", str(RDZV_PORT)))


def innet_agent(switch: str = "switch", deadline: float = 300.0) -> Any:
    """A started agent for torchrun's ``RANK`` of ``WORLD_SIZE`` on the job of the switch service
    named ``switch`` (close it when done)."""
    import dataclasses

    from innet.host.agent.agent import Agent
    from innet.testbed.cluster.roles import ClusterRoleConfig, wait_for_jobs
    from innet.testbed.cluster.timed import agent_config

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    config = ClusterRoleConfig.from_env()
    base = dataclasses.replace(config.base, switch_host=switch, workers=world, train_steps=0, deadline=deadline)
    job = wait_for_jobs(dataclasses.replace(config, base=base))
    return Agent(agent_config(base, job, rank)).start()


def check(steps: int) -> dict[str, Any]:
    """The script's body in one torchrun rank (module docstring); its result document, the JSON
    message the rank prints after ``INNET_RESULT``."""
    import numpy as np
    import torch
    import torch.distributed as dist

    from innet.testbed.luwu.hook_check import gradient_series
    from innet.testbed.luwu.train import TrainSpec
    from innet.wire import quantize as qz

    torch.set_num_threads(1)
    dist.init_process_group("gloo")  # torchrun's environment: MASTER_ADDR, RANK, WORLD_SIZE
    rank, world = dist.get_rank(), dist.get_world_size()
    agent = innet_agent("switch")
    try:
        series = gradient_series(TrainSpec(mode="ddp-gloo", rank=rank, world=world, hidden=(32,)), agent, steps, 0.01)
        local_max = torch.tensor(np.max(np.abs(series.local), axis=1), dtype=torch.float64)
        dist.all_reduce(local_max, op=dist.ReduceOp.MAX)  # B of every step, over all ranks
        dist.barrier()
    finally:
        agent.close()
        dist.destroy_process_group()
    eps = float(np.finfo(np.float32).eps)
    bounds = [float(b) for b in local_max]
    limits = [2.0 ** -(qz.sum_frac_bits(b, world) + 1) + 4 * eps * b for b in bounds]
    diffs = [float(np.max(np.abs(series.innet[s] - series.gloo[s]))) for s in range(steps)]
    return {"rank": rank, "world": world, "host": socket.gethostname(), "steps": steps, "max_diff": diffs,
            "limit": limits, "ok": all(d <= lim for d, lim in zip(diffs, limits)), "train": None}


def torchrun_argv(workers: int, endpoint: str, local_addr: str, module: str = __name__) -> list[str]:
    """``torchrun`` (as ``python -m torch.distributed.run``: the image's torch has no launcher
    script of its own) for one task of ``workers``."""
    return [sys.executable, "-m", "torch.distributed.run", f"--nnodes={workers}", "--nproc-per-node=1",
            "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}", "--rdzv-id=innet", f"--local-addr={local_addr}",
            "--max-restarts=0", "-m", module]


def run_worker_task(workers: int, deadline: float, controller: str = "controller") -> int:
    """A worker task of the ``ddp`` workload: torchrun on the controller's rendezvous, then
    tell the controller this task is done."""
    from datetime import timedelta

    import torch.distributed as dist

    from innet.testbed.cluster.timed import local_address, local_interface

    address = socket.gethostbyname(controller)  # by address: see timed.timed_gloo
    iface = local_interface(controller)
    local = local_address(controller)
    env = {**os.environ, "GLOO_SOCKET_IFNAME": iface, "OMP_NUM_THREADS": "1"}
    try:
        code = subprocess.run(torchrun_argv(workers, f"{address}:{rdzv_port()}", local), env=env,
                              timeout=deadline).returncode
    except subprocess.TimeoutExpired:
        print(f"innet cluster worker: torchrun did not finish within {deadline:g} s", file=sys.stderr, flush=True)
        code = 1
    store = dist.TCPStore(address, rdzv_port(), None, is_master=False, timeout=timedelta(seconds=60))
    store.add(DONE_KEY, 1)
    return code


def serve_rendezvous(workers: int, deadline: float) -> None:
    """The controller's part of the ``ddp`` workload after the job: torchrun's c10d store,
    until every worker task said it is done."""
    from innet.testbed.cluster.timed import serve_store

    serve_store(workers, deadline, rdzv_port(), DONE_KEY, "rendezvous store")


def main(argv: Sequence[str] | None = None) -> int:
    from innet.testbed.cluster.roles import RESULT_TAG

    steps = int(os.environ.get(STEPS_ENV, "4"))
    doc = check(steps)
    print(f"{RESULT_TAG} " + json.dumps(doc), flush=True)
    return 0 if doc["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
