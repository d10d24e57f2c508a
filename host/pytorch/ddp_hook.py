"""A DDP communication hook doing the gradient allreduce through innet (INA sum).

DDP hands the hook each gradient bucket (a flat tensor) as backward fills it and expects a
``torch.futures.Future`` of the averaged bucket. The hook queues the bucket on one thread
that runs ``Agent.allreduce_into`` (the agent quantizes float32 to int32 with the exchanged,
overflow-free bound; ``innet.wire.quantize``), so backward goes on computing the next
buckets while the switch sums this one. DDP itself still needs a process group (gloo) for
its start-up broadcast of the parameters; every gradient byte goes through the switch.

The bucket's bytes are copied once into the agent's shared memory and the result is
dequantized from it straight into the bucket (a CPU bucket is read and written through a
numpy view of its own memory, nothing is allocated per bucket); a CUDA bucket goes through
a pinned host buffer on a side stream (``innet.host.pytorch.staging``).

Precision: with ``B`` the largest |gradient| in the bucket over all workers and N workers,
each value is rounded to a multiple of ``2**-f`` where ``2**f`` is the largest power of two
with ``N * B * 2**f <= 2**31 - 1``; the summed error is at most ``N * 2**-(f+1)``, i.e. about
``N**2 * B * 2**-31`` (relative to B, ~2e-9 N**2), and after dividing by N, ``N * B * 2**-31``.
"""

# No ``from __future__ import annotations``: DDP checks the hook's annotations at run time.

import concurrent.futures
import time
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from innet.host.agent.agent import Agent
from innet.host.pytorch.staging import Stager


@dataclass
class InnetHookState:
    """The hook's state: a started agent of a sum job whose workers are the DDP ranks."""

    agent: Agent
    world_size: int
    executor: concurrent.futures.ThreadPoolExecutor = field(
        default_factory=lambda: concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="innet-ddp"))
    stager: Stager = field(default_factory=Stager)
    """Host staging of device buckets (CPU buckets: views, no copy)."""
    buckets: int = 0
    saturated: int = 0
    """Gradient values clipped by the quantizer (none with the exchanged bound)."""
    seconds: float = 0.0
    """Time from taking a bucket up to its future's result."""
    stage_seconds: float = 0.0
    """Of it, staging: device -> host copies, and host -> device copies of the results."""
    agent_seconds: float = 0.0
    """Of it, in the agent process (quantization, the exchange of the bound, the stream of
    chunks through the switch); the rest is the copy into its segment and dequantization."""


def _allreduce_bucket(state: InnetHookState, buffer: torch.Tensor, ready: Any) -> torch.Tensor:
    start = time.perf_counter()
    stager = state.stager
    host = stager.to_host(buffer, ready)  # a CPU float32 bucket: a view of its memory
    out = stager.host_buffer(buffer)
    target = host if out is None else out
    staged = time.perf_counter()
    state.agent.allreduce_into(host, target, divisor=state.world_size)
    reduced = time.perf_counter()
    stager.to_device(target, buffer, wait="host")  # nothing to do where target is the bucket's memory
    last = state.agent.last
    state.saturated += last.saturated if last is not None else 0
    state.agent_seconds += last.seconds if last is not None else 0.0
    state.buckets += 1
    done = time.perf_counter()
    state.stage_seconds += (staged - start) + (done - reduced)
    state.seconds += done - start
    return buffer


def innet_allreduce_hook(state: InnetHookState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """Average ``bucket`` over the workers through the switch (see module docstring)."""
    buffer = bucket.buffer()
    ready = state.stager.mark(buffer)  # after backward's kernels that filled the bucket
    future: torch.futures.Future[torch.Tensor] = torch.futures.Future()

    def run() -> None:
        try:
            future.set_result(_allreduce_bucket(state, buffer, ready))
        except BaseException as error:  # DDP raises it from backward
            future.set_exception(error)  # type: ignore[arg-type]  # torch's stub says Tensor

    state.executor.submit(run)
    return future


def register_innet_hook(ddp: Any, agent: Agent) -> InnetHookState:
    """The one line an existing DDP script adds: gradients go through innet from now on."""
    state = InnetHookState(agent, dist.get_world_size())
    ddp.register_comm_hook(state, innet_allreduce_hook)
    return state

