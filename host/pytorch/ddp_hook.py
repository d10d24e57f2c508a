"""A DDP communication hook doing the gradient allreduce through innet (INA sum).

DDP hands the hook each gradient bucket (a flat tensor) as backward fills it and expects a
``torch.futures.Future`` of the averaged bucket. The hook queues the bucket on one thread
that runs ``Agent.allreduce`` (the agent quantizes float32 to int32 with the exchanged,
overflow-free bound; ``innet.host.wire.quantize``), so backward goes on computing the next
buckets while the switch sums this one. DDP itself still needs a process group (gloo) for
its start-up broadcast of the parameters; every gradient byte goes through the switch.

Precision: with ``B`` the largest |gradient| in the bucket over all workers and N workers,
each value is rounded to a multiple of ``2**-f`` where ``2**f`` is the largest power of two
with ``N * B * 2**f <= 2**31 - 1``; the summed error is at most ``N * 2**-(f+1)``, i.e. about
``N**2 * B * 2**-31`` (relative to B, ~2e-9 N**2), and after dividing by N, ``N * B * 2**-31``.
"""

# No ``from __future__ import annotations``: DDP checks the hook's annotations at run time.

import concurrent.futures
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from innet.host.agent.agent import Agent


@dataclass
class InnetHookState:
    """The hook's state: a started agent of a sum job whose workers are the DDP ranks."""

    agent: Agent
    world_size: int
    executor: concurrent.futures.ThreadPoolExecutor = field(
        default_factory=lambda: concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="innet-ddp"))
    buckets: int = 0
    saturated: int = 0
    """Gradient values clipped by the quantizer (none with the exchanged bound)."""
    seconds: float = 0.0


def innet_allreduce_hook(state: InnetHookState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """Average ``bucket`` over the workers through the switch (see module docstring)."""
    buffer = bucket.buffer()
    future: torch.futures.Future[torch.Tensor] = torch.futures.Future()

    def run() -> None:
        import time

        try:
            start = time.perf_counter()
            values = buffer.detach().to(torch.float32).numpy()
            total = state.agent.allreduce(values)
            buffer.copy_(torch.from_numpy(total / np.float32(state.world_size)).to(buffer.dtype))
            last = state.agent.last
            state.saturated += last.saturated if last is not None else 0
            state.buckets += 1
            state.seconds += time.perf_counter() - start
            future.set_result(buffer)
        except BaseException as error:  # DDP raises it from backward
            future.set_exception(error)  # type: ignore[arg-type]  # torch's stub says Tensor

    state.executor.submit(run)
    return future


def register_innet_hook(ddp: Any, agent: Agent) -> InnetHookState:
    """The one line an existing DDP script adds: gradients go through innet from now on."""
    state = InnetHookState(agent, dist.get_world_size())
    ddp.register_comm_hook(state, innet_allreduce_hook)
    return state
