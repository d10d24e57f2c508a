"""The host agent: one per worker, in its own process, emulating the SmartNIC.

The worker hands vectors over through shared memory and a control pipe and keeps
computing; the agent process quantizes, streams chunks through the switch
(``innet.host.agent.aggregator``) and leaves the results in shared memory::

    epoch = controller.attach(1)      # once per worker set, the same for every rank
    with Agent(AgentConfig(JobConfig(job=1, rank=0, num_workers=4, epoch=epoch), transport)) as agent:
        total = agent.allreduce(x)              # sum mode, float32
        agent.push(gradients); params = agent.pull()   # sgd/momentum: switch is the optimizer

Worker side (``Agent``): ``push`` copies the vector into the input segment and sends one
control message (returns at once); ``pull`` waits for the agent's reply, with the
agent process's liveness checked while waiting. Errors in the agent (``AggregationError``
naming the job, chunk and missing workers) are raised by ``pull``. ``close`` stops the
agent and unlinks the segments, also after errors.

An agent never outlives its worker (a dead host stops contributing at once): the agent
process asks the kernel for a signal when its parent dies (``PR_SET_PDEATHSIG`` on Linux,
then re-checks ``os.getppid()`` for a parent that died before that), and it watches the
control pipe during an operation as well as between operations, so EOF (the worker is
gone) or ``stop`` (``close``) ends a running operation within one wake-up of its selector.
It then closes its segments and its socket and exits; the worker's resource tracker unlinks
the segments of a killed worker.

Sum mode: the bound B of the fixed-point scale (``innet.wire.quantize``) is
``AgentConfig.sum_bound`` if set, else exchanged: each worker puts the float32 bits of its
max |x| at index ``rank`` of a ``num_workers``-value vector and the switch sums them (one
chunk; every other entry is zero, so the sum is the list of every worker's max).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import selectors
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from multiprocessing import shared_memory
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import numpy.typing as npt

from innet.children import die_with_parent
from innet.wire import quantize as qz
from innet.host.agent.native import datapath as native_datapath
from innet.host.agent.aggregator import AggregationError, JobConfig, Timing
from innet.host.agent.transport import TransportConfig, TransportError, open_transport
from innet.wire import Mode

__all__ = ["Agent", "AgentConfig", "AgentError", "AggregationError", "OpResult"]


OWNER_OPS = ("reduce", "reduce_f", "collect", "bcast", "fetch")
"""Agent operations on owner lanes (REDUCE/BCAST)."""


class AgentError(RuntimeError):
    """The agent process failed to start, died, or was misused; names the job and worker."""


@dataclass(frozen=True)
class AgentConfig:
    """One worker's agent."""

    job: JobConfig
    """Job id, rank, workers, window, K."""
    transport: TransportConfig
    """UDP or frame tunnel to the switch."""
    mode: Mode = Mode.SUM
    """The job's mode: SUM for allreduce, SGD/MOMENTUM for push/pull of gradients."""
    fixed: qz.FixedPointFormat | None = None
    """Fixed point of gradients and parameters (SGD/MOMENTUM)."""
    sum_bound: float | None = None
    """Bound on |x| for sum mode; None: exchanged per allreduce (one extra round trip)."""
    timing: Timing = field(default_factory=Timing)
    """Retransmission timeouts and the per-chunk deadline."""
    start_method: str = "spawn"
    """multiprocessing start method of the agent process."""
    start_timeout: float = 60.0
    """Seconds the agent process may take to come up."""
    start_position: int = 0
    """First stream position of the plain lane. 0 for a new worker set; a process that takes
    over a failed worker's rank mid-run continues that rank's stream (docs/rail.md, "Failures")."""
    datapath: str = "native"
    """``"native"``: quantization and the protocol loop in C (``innet.host.agent.native``), falling
    back to ``"python"`` (the reference) with one line on stderr when no C compiler or cffi
    is available."""

    def __post_init__(self) -> None:
        native_datapath.check_datapath(self.datapath)
        if self.start_position < 0:
            raise ValueError(f"agent start position {self.start_position} is negative")


@dataclass(frozen=True)
class OpResult:
    """What the agent reports for one operation."""

    frac_bits: int
    """Fractional bits of the result values (scale 2**frac_bits)."""
    saturated: int
    """Inputs clipped to the bound."""
    seconds: float
    """Time in the agent from receiving the operation to the last RESULT."""
    stats: dict[str, int]
    """Cumulative protocol counters (``AggregatorStats``)."""


# -- agent process ------------------------------------------------------------------------

_PARENT_DEATH_SIGNAL = signal.SIGUSR1
"""Sent by the kernel when the agent's parent dies. Not SIGTERM: it also comes when the
*thread* that started the agent exits, and the handler ignores it while the parent process
lives (``os.getppid()`` unchanged), whereas SIGTERM (``close``, multiprocessing's exit
handler) must always end the agent."""


class _Stop(BaseException):
    """The worker stopped the agent or is gone: unwinds out of a running operation."""


def _on_parent_death_signal(parent_pid: int) -> None:
    def handler(signum: int, frame: object) -> None:
        if os.getppid() != parent_pid:
            raise _Stop(f"parent process {parent_pid} died")

    signal.signal(_PARENT_DEATH_SIGNAL, handler)


def _watch_parent(parent_pid: int | None) -> None:
    """Have the kernel signal this process when ``parent_pid`` (its parent) dies; raises
    ``_Stop`` if it already has. None: not our parent (forkserver), the control pipe's EOF
    is the only sign."""
    if parent_pid is None:
        return
    _on_parent_death_signal(parent_pid)
    die_with_parent(_PARENT_DEATH_SIGNAL)  # False without prctl: the control pipe still ends the agent
    if os.getppid() != parent_pid:  # died before the prctl took effect
        raise _Stop(f"parent process {parent_pid} died during start-up")


def _attach(name: str) -> shared_memory.SharedMemory:
    # The worker owns and unlinks the segment. Child processes share the worker's resource
    # tracker, where attaching re-registers the same name (a no-op), so nothing to undo.
    return shared_memory.SharedMemory(name=name)


class _AgentProcess:
    def __init__(self, config: AgentConfig, conn: Connection) -> None:
        self.config = config
        self.conn = conn
        self.transport = open_transport(config.transport)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.transport.fileno(), selectors.EVENT_READ, "transport")
        self.selector.register(conn.fileno(), selectors.EVENT_READ, "control")
        self.deferred: list[tuple[Any, ...]] = []
        """Control messages that arrived during an operation (other than stop)."""
        self.codec = native_datapath.select(
            config.datapath, self.transport,
            who=f"innet agent (job {config.job.job}, worker {config.job.rank})")
        job = config.job
        self.owner_ops: Any = None
        """REDUCE/BCAST (owner lanes, the whole window): the C loop's planned runs, or the python
        Aggregator without the C library."""
        if job.owners:
            self.owner_ops = self._aggregator(job)
        if job.is_owner:
            self.aggregator: Any = self.owner_ops  # an owner takes part in no plain operation
        else:
            # the plain lane alone (its slots, no owners)
            plain = replace(job, window=job.lanes.plain_slots, owners=(), owner_slots=0) if job.owners else job
            self.aggregator = self._aggregator(plain)
            self.aggregator.position = config.start_position
        self.segments: tuple[shared_memory.SharedMemory, shared_memory.SharedMemory] | None = None
        self.scratch: npt.NDArray[np.int32] = np.empty(0, np.int32)
        """The quantized input of a sum or gradient operation, kept from one operation to the
        next: a fresh 4-bytes-per-value array each time made every operation fault in and zero
        new pages (with the result array, 15% of all CPU time in a 16M allreduce, measured)."""

    def _aggregator(self, job: JobConfig) -> Any:
        """This datapath's loop for ``job`` on the agent's transport, watching the control pipe."""
        return self.codec.aggregator(job, self.transport, self.config.timing, wait=self._wait,
                                     control=self._control_fd, on_control=self._control_during_op)

    def _wait(self, timeout: float) -> bool:
        """The aggregator's wait: True if the transport is readable; the control pipe is
        watched too, so a stop or a dead worker ends the operation (``_Stop``)."""
        readable = False
        for key, _ in self.selector.select(timeout):
            if key.data == "transport":
                readable = True
            else:
                self._control_during_op()
        return readable

    def _control_fd(self) -> int:
        """The control pipe while it is watched (the native loop's ``control``), else -1."""
        return self.conn.fileno() if self.conn.fileno() in self.selector.get_map() else -1

    def _control_during_op(self) -> None:
        try:
            msg = self.conn.recv()
        except (EOFError, OSError):
            raise _Stop("worker gone (control pipe closed)") from None
        if msg[0] == "stop":
            raise _Stop("stopped by the worker")
        # Not sent by Agent while an operation is pending; kept for after it, and the pipe
        # is left alone until then (it would stay readable).
        self.deferred.append(msg)
        self.selector.unregister(self.conn.fileno())

    def _next_message(self) -> tuple[Any, ...]:
        if self.deferred:
            return self.deferred.pop(0)
        if self.conn.fileno() not in self.selector.get_map():
            self.selector.register(self.conn.fileno(), selectors.EVENT_READ, "control")
        return self.conn.recv()  # type: ignore[no-any-return]

    def serve(self) -> None:
        self.conn.send(("ready", self.transport.local_address, self.codec.name))
        while True:
            try:
                msg = self._next_message()
            except (EOFError, OSError):  # the worker went away
                return
            if msg[0] == "stop":
                return
            if msg[0] == "attach":
                self._close_segments()
                self.segments = (_attach(msg[1]), _attach(msg[2]))
                self.scratch = np.empty(self.segments[0].size // 4, np.int32)
                continue
            if msg[0] == "take_rank":
                self.conn.send(("took_rank", self._take_rank(msg[1], msg[2])))
                continue
            _, op_id, kind, n, first_chunk, frac_bits = msg
            try:
                self.conn.send(("done", op_id, self._op(kind, n, first_chunk, frac_bits)))
            except (BrokenPipeError, ConnectionResetError):  # the worker went away
                return
            except Exception as error:  # reported to the worker, raised by pull()
                try:
                    self.conn.send(("error", op_id, error))
                except Exception:  # not picklable
                    self.conn.send(("error", op_id, AgentError(f"{type(error).__name__}: {error}")))

    def _take_rank(self, rank: int, position: int) -> str:
        """Become worker ``rank`` of the job at stream ``position`` (a standby taking over a
        failed rank); an error text, or "" when done."""
        job = self.config.job
        if job.owners or job.is_owner:
            return f"job {job.job}: a worker of a job with owners cannot take another rank"
        try:
            new = replace(job, rank=rank)
        except ValueError as error:
            return str(error)
        self.config = replace(self.config, job=new, start_position=position)
        self.aggregator = self._aggregator(new)
        self.aggregator.position = position
        return ""

    def _op(self, kind: str, n: int, first_chunk: int = 0, frac_bits: int = 0) -> OpResult:
        assert self.segments is not None
        start = time.monotonic()
        inp = self.segments[0].buf
        out = np.ndarray((n,), np.int32, self.segments[1].buf)
        job = self.config.job
        saturated = 0
        if kind in OWNER_OPS:
            if self.owner_ops is None:
                raise AgentError(f"agent of job {job.job}, worker {job.rank}: {kind} needs a job with owners "
                                 "(JobConfig.owners)")
            if kind == "reduce_f":
                x = np.ndarray((n,), np.float32, inp)
                q = self.codec.quantize(x, frac_bits, qz.per_worker_limit(job.num_workers), what="reduce_to input")
                self.owner_ops.reduce_to(q.values, first_chunk)
                saturated = q.saturated
            elif kind == "reduce":
                self.owner_ops.reduce_to(np.ndarray((n,), np.int32, inp), first_chunk)
            elif kind == "bcast":
                self.owner_ops.broadcast(np.ndarray((n,), np.int32, inp), first_chunk)
            elif kind == "collect":
                out[:] = self.owner_ops.collect(n, first_chunk)
            else:
                out[:] = self.owner_ops.fetch(n, first_chunk)
            return OpResult(frac_bits, saturated, time.monotonic() - start, self.owner_ops.stats.as_dict())
        frac_bits = 0
        if kind == "int":
            values = np.ndarray((n,), np.int32, inp).copy()
        else:
            x = np.ndarray((n,), np.float32, inp)
            if kind == "sum":
                bound = self.config.sum_bound
                if bound is None:
                    bound = self._exchange_bound(x)
                q, frac_bits = self.codec.quantize_sum(x, bound, job.num_workers, out=self.scratch[:n])
            else:
                fmt = self.config.fixed or qz.FixedPointFormat(num_workers=job.num_workers)
                q = self.codec.grads(fmt, x, out=self.scratch[:n])
                frac_bits = fmt.param_frac_bits
            values, saturated = q.values, q.saturated
        self.aggregator.run(values, out=out)
        return OpResult(frac_bits, saturated, time.monotonic() - start,
                        self.aggregator.stats.as_dict())

    def _exchange_bound(self, x: npt.NDArray[np.float32]) -> float:
        job = self.config.job
        mine = qz.bound_contribution(x, job.rank, job.num_workers, f"allreduce input of worker {job.rank}")
        return qz.exchanged_bound(self.aggregator.run(mine))

    def _close_segments(self) -> None:
        if self.segments is not None:
            for shm in self.segments:
                shm.close()
            self.segments = None

    def close(self) -> None:
        self._close_segments()
        self.selector.close()
        self.transport.close()


def _agent_main(config: AgentConfig, conn: Connection, parent_pid: int | None = None) -> None:
    try:
        _watch_parent(parent_pid)
        try:
            agent = _AgentProcess(config, conn)
        except (TransportError, OSError) as error:
            conn.send(("failed", str(error)))
            return
        try:
            agent.serve()
        finally:
            agent.close()
    except _Stop:
        return


# -- worker side ----------------------------------------------------------------------------

class Agent:
    """The worker's handle on its agent process (see module docstring)."""

    def __init__(self, config: AgentConfig, capacity: int = 1 << 16) -> None:
        self.config = config
        self.capacity = 0
        self._initial_capacity = max(1, capacity)
        self._process: Any = None
        self._conn: Connection | None = None
        self._segments: tuple[shared_memory.SharedMemory, shared_memory.SharedMemory] | None = None
        self._pending: tuple[int, str, int] | None = None
        self._retired: list[shared_memory.SharedMemory] = []
        self._op_ids = 0
        self.last: OpResult | None = None
        """Report of the last completed operation."""
        self.local_address: tuple[str, int] | None = None
        """The agent's bound UDP address (known after start)."""
        self.datapath: str | None = None
        """The datapath the agent process runs (``"native"`` or ``"python"``; after start)."""
        self._codec: native_datapath.Codec | None = None

    @property
    def _name(self) -> str:
        return f"job {self.config.job.job}, worker {self.config.job.rank}"

    # -- lifecycle
    def start(self) -> "Agent":
        """Start the agent process and wait until its transport is open; raises AgentError."""
        ctx: Any = mp.get_context(self.config.start_method)
        parent, child = ctx.Pipe()
        self._conn = parent
        # spawn and fork make this process the agent's parent; forkserver does not
        watch = os.getpid() if ctx.get_start_method() in ("spawn", "fork") else None
        self._process = ctx.Process(target=_agent_main, args=(self.config, child, watch),
                                    name=f"innet-agent-{self.config.job.job}-{self.config.job.rank}",
                                    daemon=True)
        try:
            try:
                self._process.start()
            except (OSError, ValueError, TypeError) as error:  # fork refused, spawn cannot pickle
                self._process = None
                child.close()
                raise AgentError(f"agent of {self._name}: cannot start its process: {error}") from None
            child.close()
            reply = self._recv(self.config.start_timeout, "start")
            if reply[0] != "ready":
                raise AgentError(f"agent of {self._name}: {reply[1]}")
            self.local_address = tuple(reply[1])  # type: ignore[assignment]
            self.datapath = reply[2]
            self._ensure_capacity(self._initial_capacity)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop the agent process and release shared memory; safe to call twice."""
        conn, self._conn = self._conn, None
        process, self._process = self._process, None
        try:
            if conn is not None:
                try:
                    conn.send(("stop",))
                except (OSError, ValueError):
                    pass
            if process is not None and process.pid is not None:  # never started: nothing to join
                process.join(timeout=2)
                if process.is_alive():
                    process.terminate()
                    process.join(timeout=2)
                if process.is_alive():
                    process.kill()
                    process.join(timeout=2)
        finally:
            if conn is not None:
                conn.close()
            self._free_segments()
            self._pending = None

    def __enter__(self) -> "Agent":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _free_segments(self) -> None:
        self._release_retired()
        if self._segments is not None:
            for shm in self._segments:
                shm.close()
                shm.unlink()
            self._segments = None
            self.capacity = 0

    def _ensure_capacity(self, n: int) -> None:
        if n <= self.capacity and self._segments is not None:
            return
        capacity = max(n, 2 * self.capacity, self._initial_capacity)
        old = self._segments
        self._segments = (shared_memory.SharedMemory(create=True, size=4 * capacity),
                          shared_memory.SharedMemory(create=True, size=4 * capacity))
        self.capacity = capacity
        assert self._conn is not None
        self._conn.send(("attach", self._segments[0].name, self._segments[1].name))
        if old is not None:  # unlinked once the agent has answered (it attached the new ones)
            self._retired.extend(old)

    def _release_retired(self) -> None:
        retired, self._retired = self._retired, []
        for shm in retired:
            shm.close()
            shm.unlink()

    def _recv(self, timeout: float | None, what: str) -> tuple[Any, ...]:
        assert self._conn is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = 0.2 if deadline is None else min(0.2, max(0.0, deadline - time.monotonic()))
            if self._conn.poll(wait):
                try:
                    return self._conn.recv()  # type: ignore[no-any-return]
                except EOFError:
                    pass
            if self._process is None or not self._process.is_alive():
                code = None if self._process is None else self._process.exitcode
                raise AgentError(f"agent process of {self._name} died (exit code {code}) "
                                 f"during {what}")
            if deadline is not None and time.monotonic() >= deadline:
                raise AgentError(f"agent of {self._name}: no reply to {what} within {timeout} s")

    # -- operations
    def _submit(self, kind: str, array: npt.ArrayLike | None, dtype: type, size: int = 0,
                first_chunk: int = 0, frac_bits: int = 0) -> None:
        """Hand ``array`` (or, None, an operation on ``size`` values without input) over."""
        if self._conn is None:
            raise AgentError(f"agent of {self._name} is not running (use start() or 'with')")
        if self._pending is not None:
            raise AgentError(f"agent of {self._name}: an operation is still pending; pull() first")
        flat: npt.NDArray[Any] = np.ascontiguousarray(np.zeros(size) if array is None else array, dtype=dtype).ravel()
        self._ensure_capacity(flat.size)
        assert self._segments is not None
        if array is not None:
            np.ndarray((flat.size,), dtype, self._segments[0].buf)[:] = flat
        self._op_ids += 1
        self._pending = (self._op_ids, kind, flat.size)
        self._conn.send(("op", self._op_ids, kind, flat.size, first_chunk, frac_bits))

    def _result_view(self, timeout: float | None) -> npt.NDArray[np.int32]:
        """Wait for the pending operation; its result as a view of the output segment (valid
        until the next operation)."""
        if self._pending is None:
            raise AgentError(f"agent of {self._name}: nothing to pull (push first)")
        op_id, kind, n = self._pending
        reply = self._recv(timeout, f"operation {op_id} ({kind}, {n} values)")
        self._pending = None
        self._release_retired()
        if reply[0] == "error":
            raise reply[2]
        self.last = reply[2]
        assert self._segments is not None
        return np.ndarray((n,), np.int32, self._segments[1].buf)

    def _wait(self, timeout: float | None) -> npt.NDArray[np.int32]:
        return self._result_view(timeout).copy()

    def push(self, gradients: npt.ArrayLike) -> None:
        """Start aggregating float gradients (SGD/MOMENTUM jobs); returns at once."""
        if self.config.mode == Mode.SUM:
            raise AgentError(f"agent of {self._name}: push() needs an sgd/momentum job; "
                             "use allreduce() in sum mode")
        self._submit("grad", gradients, np.float32)

    def pull(self, timeout: float | None = None) -> npt.NDArray[np.float32]:
        """Wait for the pushed vector's result: the updated parameters as float32."""
        fmt = self.config.fixed or qz.FixedPointFormat(num_workers=self.config.job.num_workers)
        return self._dequantizer().dequantize(self._wait(timeout), fmt.param_frac_bits)

    def take_rank(self, rank: int, position: int, timeout: float = 30.0) -> None:
        """Act as worker ``rank`` from stream ``position`` on (same job, epoch and transport):
        a standby that was started before it knew which failed worker it would replace
        (docs/rail.md, "Failures"). Raises AgentError."""
        if self._conn is None:
            raise AgentError(f"agent of {self._name} is not running (use start() or 'with')")
        if self._pending is not None:
            raise AgentError(f"agent of {self._name}: an operation is still pending; pull() first")
        self._conn.send(("take_rank", rank, position))
        reply = self._recv(timeout, f"taking rank {rank}")
        if reply[0] != "took_rank" or reply[1]:
            raise AgentError(f"agent of {self._name}: cannot take rank {rank}: {reply[1] if len(reply) > 1 else reply}")
        self.config = replace(self.config, job=replace(self.config.job, rank=rank), start_position=position)

    def push_int(self, values: npt.ArrayLike) -> None:
        """Start aggregating raw int32 values (any mode); returns at once."""
        self._submit("int", values, np.int32)

    def pull_int(self, timeout: float | None = None) -> npt.NDArray[np.int32]:
        """Wait for the result of ``push``/``push_int`` as the switch's raw int32 values."""
        return self._wait(timeout)

    def allreduce(self, array: npt.ArrayLike, timeout: float | None = None) -> npt.NDArray[np.float32]:
        """Sum of ``array`` over the job's workers (float32, fixed point on the wire)."""
        shape = np.shape(array)
        self._submit("sum", array, np.float32)
        result = self._wait(timeout)
        assert self.last is not None
        return self._dequantizer().dequantize(result, self.last.frac_bits).reshape(shape)

    def allreduce_into(self, array: npt.NDArray[np.float32], out: npt.NDArray[np.float32], divisor: int = 1,
                       timeout: float | None = None) -> None:
        """``allreduce(array) / divisor`` written into ``out`` (float32, contiguous, ``array``'s
        size; may be ``array`` itself): one copy into the agent's segment, the result
        dequantized from the segment straight into ``out``, nothing allocated. The same
        values as ``allreduce(array) / np.float32(divisor)``."""
        if out.dtype != np.float32 or not out.flags.c_contiguous or out.size != np.size(array):
            raise AgentError(f"agent of {self._name}: allreduce_into needs a contiguous float32 out of "
                             f"{np.size(array)} values, got {out.dtype} {out.shape}")
        self._submit("sum", array, np.float32)
        result = self._result_view(timeout)
        assert self.last is not None
        flat = out.reshape(-1)
        self._dequantizer().dequantize_into(result, self.last.frac_bits, flat)
        if divisor != 1:
            np.divide(flat, np.float32(divisor), out=flat)

    def _dequantizer(self) -> native_datapath.Codec:
        """The agent's datapath on the worker side (the C library is cached by then)."""
        if self._codec is None:
            lib = None
            if self.datapath == "native":
                try:
                    lib = native_datapath.load_native()
                except native_datapath.NativeBuildError:
                    lib = None
            self._codec = native_datapath.Codec(lib)
        return self._codec

    def allreduce_int(self, array: npt.ArrayLike, timeout: float | None = None) -> npt.NDArray[np.int32]:
        """Exact int32 sum (wrapping) of ``array`` over the job's workers."""
        shape = np.shape(array)
        self._submit("int", array, np.int32)
        return self._wait(timeout).reshape(shape)

    # -- reduce-to and broadcast (jobs with owners, docs/PROTOCOL.md)
    def reduce_to_int(self, values: npt.ArrayLike, first_chunk: int = 0, timeout: float | None = None) -> None:
        """Worker: send int32 ``values`` (chunk ``c`` is the job's chunk ``first_chunk + c``)
        as REDUCE; their sums over the workers go to each chunk's owner. Returns when every
        chunk's copy is complete."""
        self._submit("reduce", values, np.int32, first_chunk=first_chunk)
        self._wait(timeout)

    def reduce_to(self, x: npt.ArrayLike, frac_bits: int, first_chunk: int = 0,
                  timeout: float | None = None) -> None:
        """Worker: float32 ``x`` quantized at ``2**frac_bits`` (every worker and the owners use
        the same, e.g. ``quantize.sum_frac_bits(bound, N)``; values beyond the per-worker
        limit are clipped, counted in ``last.saturated``), sent as REDUCE."""
        self._submit("reduce_f", x, np.float32, first_chunk=first_chunk, frac_bits=frac_bits)
        self._wait(timeout)

    def collect_int(self, size: int, first_chunk: int = 0, timeout: float | None = None) -> npt.NDArray[np.int32]:
        """Owner: the REDUCE sums of this owner's chunks among ``size`` elements from chunk
        ``first_chunk`` (0 elsewhere); the workers send the same operation with ``reduce_to``."""
        self.begin_collect(size, first_chunk)
        return self.end_collect(timeout)

    def begin_collect(self, size: int, first_chunk: int = 0) -> None:
        """Owner: start ``collect_int`` and return at once; ``end_collect`` gives the sums. An
        owner that works on one result while the next is collected keeps its requests going
        out, so the workers' stream does not stall on its lane in between."""
        self._submit("collect", None, np.int32, size, first_chunk)

    def end_collect(self, timeout: float | None = None) -> npt.NDArray[np.int32]:
        """The sums of the collect ``begin_collect`` started (a copy)."""
        return self._wait(timeout)

    def collect(self, size: int, frac_bits: int, first_chunk: int = 0,
                timeout: float | None = None) -> npt.NDArray[np.float32]:
        """Owner: ``collect_int`` as float32 (the sums at ``2**frac_bits``)."""
        return self._dequantizer().dequantize(self.collect_int(size, first_chunk, timeout), frac_bits)

    def broadcast_int(self, values: npt.ArrayLike, first_chunk: int = 0, timeout: float | None = None) -> None:
        """Owner: send this owner's chunks of int32 ``values`` (the other chunks are not read)
        as BCAST to every worker (float32 parameters: pass ``x.view(np.int32)``, exact)."""
        self._submit("bcast", values, np.int32, first_chunk=first_chunk)
        self._wait(timeout)

    def fetch_int(self, size: int, first_chunk: int = 0, timeout: float | None = None) -> npt.NDArray[np.int32]:
        """Worker: the owners' BCAST values of ``size`` elements from chunk ``first_chunk``
        (header-only requests; ``.view(np.float32)`` for float parameters)."""
        self._submit("fetch", None, np.int32, size, first_chunk)
        return self._wait(timeout)
