"""A worker's side of a LuWu job: push layer gradients, pull layer parameters, in the job's
fixed order (``innet.host.luwu.plan.schedule``), on a communication thread.

    with LuwuWorker(plan, rank, transport) as w:
        w_i = w.take(i)            # layer i's parameters of the current step (waits for the pull)
        ...                        # forward, backward
        w.push(i, grad_i)          # as backward produces it, any order; returns at once
        w.finish_step()            # layers not pushed get zeros; the next step's pulls start

A push is the layer's bound agreement (one CONTRIB chunk) and one REDUCE of the layer's
segments; a pull one fetch of them (``innet.host.luwu.plan``). The thread walks the schedule: a push of layer ``i`` waits until the worker has handed
layer ``i``'s gradient over (so every member sends the same operations in the same order,
whatever order autograd fires its hooks in), a pull starts as soon as the previous
operation is done (prefetch: layer ``i+1`` is on its way while forward computes layer
``i``). One agent process does the packets (``innet.host.agent.agent``); the thread only waits
on it, so compute and communication overlap. A duplex plan (``LuwuPlan.pull_job``) has a
second agent and thread for the pulls, which fetch layers ``L-1..0`` while the pushes go on,
each piece as soon as its node updated it: the link carries both directions at once.

The worker keeps no optimizer state; ``take`` hands a pulled layer over and forgets it, so
parameters live only where the caller keeps them. A failed operation is raised by the
next ``take``/``finish_step``/``close`` as :class:`OptimizerNodeError` when the switch
named optimizer nodes as the missing contributors, as :class:`WorkerLostError` when it named
only workers, else as the agent's error.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from innet.host.agent.agent import Agent, AgentConfig
from innet.host.luwu.plan import LuwuPlan, schedule
from innet.wire import quantize as qz
from innet.host.agent.aggregator import AggregationError, JobConfig, Timing
from innet.host.agent.transport import TransportConfig

F32 = npt.NDArray[np.float32]


class OptimizerNodeError(AggregationError):
    """The switch is waiting for optimizer node(s) that do not contribute (dead or stuck)."""

    def __init__(self, message: str, nodes: tuple[str, ...], job: int = 0, chunk: int = -1,
                 missing: tuple[int, ...] | None = None) -> None:
        super().__init__(message, job, chunk, missing)
        self.nodes = nodes

    def __reduce__(self) -> tuple[object, ...]:
        return (OptimizerNodeError, (str(self), self.nodes, self.job, self.chunk, self.missing))


class WorkerLostError(AggregationError):
    """The switch is waiting for other workers of the job (dead or stuck): every member's
    operation stops at its chunk deadline with this error naming them."""

    def __init__(self, message: str, workers: tuple[int, ...], job: int = 0, chunk: int = -1,
                 missing: tuple[int, ...] | None = None) -> None:
        super().__init__(message, job, chunk, missing)
        self.workers = workers

    def __reduce__(self) -> tuple[object, ...]:
        return (WorkerLostError, (str(self), self.workers, self.job, self.chunk, self.missing))


class _Closed(Exception):
    pass


class _LayerWire:
    """Where a layer's elements sit in its wire vector (its segments, padded to chunks)."""

    def __init__(self, plan: LuwuPlan, layer: int) -> None:
        segments = plan.layer_segments(layer)
        self.first_chunk = segments[0].first_chunk
        self.size = sum(s.chunks for s in segments) * plan.k
        self.parts = [((s.first_chunk - self.first_chunk) * plan.k, s.at, s.n) for s in segments]
        """(wire offset of the segment's header, offset in the layer, elements)."""
        self.headers = np.array([w for w, _, _ in self.parts], np.intp)

    def pack(self, values: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
        out = np.zeros(self.size, np.int32)
        for w, at, n in self.parts:
            out[w + 1:w + 1 + n] = values[at:at + n]
        return out

    def unpack(self, wire_values: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
        if len(self.parts) == 1:
            w, _, n = self.parts[0]
            return wire_values[w + 1:w + 1 + n].copy()
        return np.concatenate([wire_values[w + 1:w + 1 + n] for w, _, n in self.parts])


@dataclass
class WorkerStats:
    """Time the communication thread spent (seconds) and what it moved."""

    push_seconds: float = 0.0
    pull_seconds: float = 0.0
    wait_seconds: float = 0.0
    """Time ``take`` blocked the caller (communication not hidden behind compute)."""
    pushes: int = 0
    pulls: int = 0
    saturated: int = 0
    """Gradient values clipped by the quantizer (beyond the exchanged bound: none expected)."""
    frac_bits: list[int] = field(default_factory=list)


class LuwuWorker:
    """See module docstring."""

    def __init__(self, plan: LuwuPlan, rank: int, transport: TransportConfig,
                 timing: Timing | None = None, pull_transport: TransportConfig | None = None) -> None:
        if not 0 <= rank < plan.num_workers:
            raise ValueError(f"luwu worker rank {rank} is outside 0..{plan.num_workers - 1}")
        if plan.duplex != (pull_transport is not None):
            raise ValueError(f"luwu worker {rank}: a duplex plan needs a pull transport (its second agent's "
                             "address), a plan on one job none")
        self.plan = plan
        self.rank = rank
        job = JobConfig(job=plan.job, rank=rank, num_workers=plan.num_workers, window=plan.window, k=plan.k,
                        epoch=plan.epoch, owners=plan.owner_ranges())
        self._wire = [_LayerWire(plan, i) for i in range(len(plan.layer_sizes))]
        capacity = max(w.size for w in self._wire)
        timing = plan.timing(timing or Timing())
        self.agent = Agent(AgentConfig(job, transport, timing=timing), capacity=capacity)
        self.pull_agent = self.agent
        """The agent of the pulls: a second one, on the pull job, in a duplex plan."""
        if pull_transport is not None and plan.pull_job is not None:
            pull_job = replace(job, job=plan.pull_job, epoch=plan.pull_epoch)
            self.pull_agent = Agent(AgentConfig(pull_job, pull_transport, timing=timing),
                                    capacity=capacity)
        self.stats = WorkerStats()
        self._cond = threading.Condition()
        self._grads: dict[int, F32] = {}
        self._pulled: dict[int, F32] = {}
        self._handed: set[int] = set()
        """Layers pushed in the current step (the comm thread may have sent them already)."""
        self._pushed = [0] * len(plan.layer_sizes)
        """Pushes started per layer, after the scale agreement: every worker has the gradient
        (duplex: a layer's next pull is asked for then, not while compute may still run)."""
        self._pulls_left = len(plan.layer_sizes)
        """Layer pulls due and not done (duplex: the initial ones plus one per push)."""
        self._error: BaseException | None = None
        self._closed = False
        self._idle = False
        """The thread waits for a gradient the caller has not handed over."""
        self._threads = [threading.Thread(target=self._loop, name=f"luwu-worker-{rank}", daemon=True)]
        if plan.duplex:
            self._threads.append(threading.Thread(target=self._pull_loop, name=f"luwu-pull-{rank}", daemon=True))

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> "LuwuWorker":
        self.agent.start()
        if self.pull_agent is not self.agent:
            self.pull_agent.start()
        for thread in self._threads:
            thread.start()
        return self

    @property
    def agents(self) -> tuple[Agent, ...]:
        """The push agent, and the pull agent of a duplex plan."""
        return (self.agent,) if self.pull_agent is self.agent else (self.agent, self.pull_agent)

    def agent_stats(self) -> dict[str, int]:
        """The agents' counters of their last operations (summed over a duplex worker's two)."""
        out: dict[str, int] = {}
        for agent in self.agents:
            for key, value in (agent.last.stats if agent.last is not None else {}).items():
                out[key] = out.get(key, 0) + value
        return out

    def _done(self) -> bool:
        """Everything handed over is done: pushes, and the pulls after them."""
        if not self._threads[0].is_alive():
            return True
        return self._idle and (not self.plan.duplex or self._pulls_left == 0)

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait until everything handed over is done (pushes, and the pulls after them)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._done() and time.monotonic() < deadline:
                self._raise()
                self._cond.wait(0.2)
            self._raise()

    def close(self, drain_timeout: float = 60.0) -> None:
        """Finish what was handed over (the last step's pushes and the pulls after them: the
        optimizer nodes wait for them), then stop the agents."""
        deadline = time.monotonic() + drain_timeout
        with self._cond:
            while self._error is None and not self._done() and time.monotonic() < deadline:
                self._cond.wait(0.2)
            self._closed = True
            self._cond.notify_all()
        try:
            self.agent.close()  # ends a pending operation (the agent process stops)
        finally:
            if self.pull_agent is not self.agent:
                self.pull_agent.close()
        for thread in self._threads:
            thread.join(timeout=10)

    def __enter__(self) -> "LuwuWorker":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the caller's side ----------------------------------------------------------------

    def push(self, layer: int, grad: npt.ArrayLike) -> None:
        """Hand layer ``layer``'s gradient of the current step over (copied); returns at once."""
        g = np.array(grad, dtype=np.float32).ravel()
        if g.size != self.plan.layer_sizes[layer]:
            raise ValueError(f"luwu push of layer {layer}: {g.size} values, the layer has "
                             f"{self.plan.layer_sizes[layer]}")
        with self._cond:
            self._raise()
            if layer in self._handed:
                raise ValueError(f"luwu push of layer {layer}: pushed twice in one step")
            self._handed.add(layer)
            self._grads[layer] = g
            self._idle = False
            self._cond.notify_all()

    def finish_step(self) -> None:
        """End the step: layers without a gradient push zeros (same operations on every member)."""
        with self._cond:
            self._raise()
            for i, size in enumerate(self.plan.layer_sizes):
                if i not in self._handed:
                    self._grads[i] = np.zeros(size, np.float32)
            self._handed = set()
            self._idle = False
            self._cond.notify_all()

    def take(self, layer: int, timeout: float | None = None) -> F32:
        """Layer ``layer``'s parameters of the current step (waits for its pull; the worker
        keeps no copy)."""
        start = time.perf_counter()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while layer not in self._pulled:
                self._raise()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError(f"luwu worker {self.rank}: layer {layer} not pulled within {timeout} s")
                self._cond.wait(0.5 if left is None else min(0.5, left))
            out = self._pulled.pop(layer)
        self.stats.wait_seconds += time.perf_counter() - start
        return out

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise RuntimeError(f"luwu worker {self.rank} is closed")

    # -- the communication thread ---------------------------------------------------------

    def _loop(self) -> None:
        """The job's operations (a duplex plan: only the pushes; ``_pull_loop`` pulls)."""
        try:
            for kind, layer in schedule(len(self.plan.layer_sizes), None):
                if kind == "push":
                    self._push(layer)
                elif not self.plan.duplex:
                    self._pull(layer)
        except _Closed:
            return
        except BaseException as error:  # handed to the caller
            self._fail(error)

    def _pull_loop(self) -> None:
        """A duplex plan's pulls: layers ``L-1..0`` (``pull_order``), each version once every
        worker started pushing the version before (so a pull waits on the links and the
        node, never on compute). One fetch per layer: the nodes broadcast its pieces as they
        update them, and the requests for the later pieces are already out."""
        version = 0
        try:
            while True:
                for layer in reversed(range(len(self.plan.layer_sizes))):
                    with self._cond:
                        while self._pushed[layer] < version:
                            if self._closed:
                                raise _Closed()
                            self._cond.wait(0.5)
                    self._pull(layer, self.pull_agent)
                    with self._cond:
                        self._pulls_left -= 1
                        self._cond.notify_all()
                version += 1
        except _Closed:
            return
        except BaseException as error:
            self._fail(error)

    def _fail(self, error: BaseException) -> None:
        with self._cond:
            if self._error is None:
                self._error = self._named(error)
            self._cond.notify_all()

    def _named(self, error: BaseException) -> BaseException:
        if isinstance(error, AggregationError) and error.missing:
            nodes = tuple(n for n in (self.plan.node_name(r) for r in error.missing) if n is not None)
            if nodes:
                ranks = ", ".join(f"{n} (rank {self.plan.node_rank(self.plan.nodes.index(n))})" for n in nodes)
                return OptimizerNodeError(f"optimizer node {ranks} did not answer: job {self.plan.job} chunk "
                                          f"{error.chunk} incomplete at the deadline ({error})", nodes,
                                          error.job, error.chunk, error.missing)
            workers = tuple(sorted(r for r in error.missing if r < self.plan.num_workers))
            if workers:
                names = ", ".join(str(r) for r in workers)
                return WorkerLostError(f"luwu worker rank {names} did not answer: job {self.plan.job} chunk "
                                       f"{error.chunk} incomplete at the deadline ({error})", workers,
                                       error.job, error.chunk, error.missing)
        return error

    def _pull(self, layer: int, agent: Agent | None = None) -> None:
        lw = self._wire[layer]
        t0 = time.perf_counter()
        bits = self._op(lambda: (agent or self.agent).fetch_int(lw.size, lw.first_chunk))
        with self._cond:
            self._pulled[layer] = lw.unpack(bits).view(np.float32)
            self._cond.notify_all()
        self.stats.pull_seconds += time.perf_counter() - t0
        self.stats.pulls += 1

    def _push(self, layer: int) -> None:
        with self._cond:
            while layer not in self._grads:
                if self._closed:
                    raise _Closed()
                self._idle = not self._grads
                self._cond.notify_all()
                self._cond.wait(0.5)
            self._idle = False
            grad = self._grads.pop(layer)
        t0 = time.perf_counter()
        lw = self._wire[layer]
        frac_bits = self._op(lambda: self._agree_scale(grad))
        with self._cond:  # every worker has this layer's gradient: its next pull may be asked for
            self._pushed[layer] += 1
            if self.plan.duplex:  # the one-job schedule pulls in this thread, after the push
                self._pulls_left += 1
            self._cond.notify_all()
        vec = lw.pack(grad.view(np.int32)).view(np.float32)
        if self.rank == 0:  # each segment's header: the scale, f after quantization at 2**f
            vec[lw.headers] = np.float32(np.ldexp(np.float32(frac_bits), -frac_bits))
        self._op(lambda: self.agent.reduce_to(vec, frac_bits, lw.first_chunk))
        last = self.agent.last
        if last is not None:
            self.stats.saturated += last.saturated
            self.stats.frac_bits.append(last.frac_bits)
        self.stats.push_seconds += time.perf_counter() - t0
        self.stats.pushes += 1

    def _agree_scale(self, grad: F32) -> int:
        """The workers' common fixed-point scale of a layer: the bound exchange of the DDP path
        (one plain-lane chunk) on the layer's gradient."""
        mine = qz.bound_contribution(grad, self.rank, self.plan.num_workers, f"luwu worker {self.rank} gradient")
        return qz.sum_frac_bits(qz.exchanged_bound(self.agent.allreduce_int(mine)), self.plan.num_workers)

    def _op(self, call: Any) -> Any:
        if self._closed:
            raise _Closed()
        try:
            return call()
        except Exception:
            if self._closed:
                raise _Closed() from None
            raise
