"""The LuWu optimizer node: collects the gradient sums of its shard from the switch (REDUCE),
runs out-of-core Adam on it, broadcasts its parameters through the switch (BCAST); docs/luwu.md.

    python -m innet.host.luwu.node '<NodeConfig JSON>'

The owner of its shard's chunks in the job, with rank ``N + index`` (``innet.host.luwu.plan``). Its state
(``innet.host.luwu.ooc_adam``) lives in ``state_dir``; an existing state is reopened and
training resumes at its committed step (a restarted node), else it is created from the
initial parameters ``init`` (a ``.npy`` of the whole model; the node keeps only its shard).

After every step, and when it starts and ends, the node writes ``status.json`` in its
state directory (atomically): name, shard, step, bytes resident (RSS and the mapped
working-set bound) and on disk. ``innet inspect --optimizer DIR`` shows it.

Exit status 0 after ``steps`` steps; 3 (one line on stderr naming the missing workers)
when a chunk could not complete within the deadline; 2 for a bad configuration.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from innet.host.agent.agent import Agent, AgentConfig, AgentError
from innet.host.luwu.plan import LuwuPlan, Segment, pull_order, schedule
from innet.host.luwu.ooc_adam import AdamConfig, AdamState, AdamStateError, DEFAULT_BLOCK
from innet.host.agent.aggregator import AggregationError, JobConfig, Timing
from innet.host.agent.transport import TransportConfig
from innet.plans import JsonPlan, worker_main
from innet import rss

MODULE = __name__
STATUS_FILE = "status.json"
EXIT_AGGREGATION = 3


@dataclass(frozen=True)
class NodeConfig(JsonPlan):
    """One optimizer node (JSON on its command line)."""

    plan: LuwuPlan
    index: int
    """Which node of ``plan.nodes`` (its shard; job rank ``N + index``)."""
    state_dir: str
    transport: TransportConfig
    """The node's agent transport (in this plan's JSON as its ``json_form``)."""
    steps: int
    """Steps this run of the node takes (a resumed node runs this many more)."""
    adam: AdamConfig = field(default_factory=AdamConfig)
    init: str | None = None
    """``.npy`` with the whole model's initial float32 parameters (ignored when resuming)."""
    block: int = DEFAULT_BLOCK
    chunk_deadline: float = 120.0
    """A node waits for workers' compute between operations: a long deadline."""
    resume_step: int | None = None
    """After a failure: the step the new member set starts at, the smallest step any node
    committed (``resume_step``); a node that committed one more goes back to it. None: the
    node's own committed step."""
    threads: int = 1
    """Threads of the Adam update (the C kernel runs off the GIL)."""
    pull_transport: TransportConfig | None = None
    """A duplex plan's second agent (the pull job's broadcasts), on its own UDP port."""

    @property
    def name(self) -> str:
        return self.plan.nodes[self.index]



def model_fingerprint(plan: LuwuPlan, index: int) -> str:
    """What a node's state belongs to: the model's layer sizes, K, the node's shard. A state
    directory from another model (or shard) is refused when the node starts."""
    digest = hashlib.sha256(json.dumps([plan.k, list(plan.layer_sizes)]).encode()).hexdigest()[:12]
    start, stop = plan.shards[index]
    return (f"{plan.total} parameters in {len(plan.layer_sizes)} layers (K={plan.k}, sha256 {digest}), "
            f"shard {index + 1} of {len(plan.nodes)}: {start}..{stop - 1}")


def committed_step(directory: Path) -> int:
    """The step a node's state directory committed (for ``NodeConfig.resume_step``)."""
    return AdamState.open(Path(directory), verify=False).step


def rss_bytes(pid: int | None = None) -> int:
    """Resident set size of a process, 0 where unknown (gone, or not ours to read): the status
    file is written either way."""
    return rss.rss_bytes(pid) or 0


def write_status(directory: Path, doc: dict[str, Any]) -> None:
    tmp = directory / (STATUS_FILE + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, directory / STATUS_FILE)


def read_status(directory: Path) -> dict[str, Any]:
    """The node's last status; ValueError naming the file when there is none or it is garbled."""
    path = Path(directory) / STATUS_FILE
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"optimizer node status {path}: no such file (is DIR a node's state_dir?)") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"optimizer node status {path}: not JSON ({error})") from None
    return data


class OptimizerNode:
    """The node's loop over the job's operations (see module docstring)."""

    def __init__(self, config: NodeConfig, transport: TransportConfig,
                 pull_transport: TransportConfig | None = None) -> None:
        plan = config.plan
        if not 0 <= config.index < len(plan.nodes):
            raise AdamStateError(f"optimizer node index {config.index} is outside 0..{len(plan.nodes) - 1}")
        self.config = config
        self.plan = plan
        self.directory = Path(config.state_dir)
        start, stop = plan.shards[config.index]
        initial = None
        if not (self.directory / "state.json").exists() and config.init is not None:
            initial = np.load(config.init, mmap_mode="r")[start:stop]
            if initial.size != stop - start:
                raise AdamStateError(f"optimizer node {config.name}: {config.init} has "
                                     f"{np.load(config.init, mmap_mode='r').size} parameters, the plan "
                                     f"{plan.total}")
        self.state = AdamState.open_or_create(self.directory, initial, config.adam, first=start, block=config.block,
                                              model=model_fingerprint(plan, config.index), threads=config.threads)
        if self.state.size != stop - start or self.state.first != start:
            raise AdamStateError(f"optimizer state {self.directory / 'state.json'}: holds elements "
                                 f"{self.state.first}..{self.state.first + self.state.size - 1}, the plan's shard "
                                 f"is {start}..{stop - 1}")
        if config.resume_step is not None and self.state.step != config.resume_step:
            if self.state.step == config.resume_step + 1:
                self.state.rollback()
            else:
                raise AdamStateError(f"optimizer state {self.directory / 'state.json'}: at step {self.state.step}, "
                                     f"cannot resume at step {config.resume_step}")
        job = JobConfig(job=plan.job, rank=plan.node_rank(config.index), num_workers=plan.num_workers,
                        window=plan.window, k=plan.k, epoch=plan.epoch, owners=plan.owner_ranges())
        if plan.duplex != (pull_transport is not None):
            raise AdamStateError(f"optimizer node {config.name}: a duplex plan needs a pull transport, "
                                 "a plan on one job none")
        self.segments: dict[int, list[Segment]] = {}
        """This node's segments of each layer it owns part of (chunk order)."""
        for seg in plan.segments:
            if seg.node == config.index:
                self.segments.setdefault(seg.layer, []).append(seg)
        largest = max(s.chunks for segs in self.segments.values() for s in segs) * plan.k
        timing = plan.timing(Timing(chunk_deadline=config.chunk_deadline))
        self.agent = Agent(AgentConfig(job, transport, timing=timing), capacity=largest)
        self.pull_agent = self.agent
        if pull_transport is not None and plan.pull_job is not None:
            pull_job = replace(job, job=plan.pull_job, epoch=plan.pull_epoch)
            self.pull_agent = Agent(AgentConfig(pull_job, pull_transport, timing=timing), capacity=largest)
        self.seconds = {"adam": 0.0, "comm": 0.0}
        self.started = time.time()

    def status(self, state: str, error: str | None = None) -> dict[str, Any]:
        start, stop = self.plan.shards[self.config.index]
        return {"format": "innet-optimizer-node/1", "name": self.config.name, "pid": os.getpid(),
                "state": state, "error": error, "job": self.plan.job, "rank": self.plan.node_rank(self.config.index),
                "shard": [start, stop], "shards": [list(s) for s in self.plan.shards], "nodes": list(self.plan.nodes),
                "step": self.state.step, "adam": asdict(self.state.config), "bytes_on_disk": self.state.bytes_on_disk,
                "bytes_state": 3 * 4 * self.state.size, "bytes_working_set": self.state.working_set_bytes,
                "rss_bytes": rss_bytes(), "seconds": dict(self.seconds), "updated": time.time(),
                "agent_stats": dict(self.agent.last.stats) if self.agent.last is not None else {}}

    def run(self) -> int:
        """Run ``steps`` steps; the step reached."""
        write_status(self.directory, self.status("running"))
        if self.plan.duplex:
            with self.agent, self.pull_agent:
                self._run_duplex()
        else:
            with self.agent:
                self._run_serial()
        write_status(self.directory, self.status("done"))
        return self.state.step

    def _collect_and_update(self, seg: Segment) -> None:
        t0 = time.perf_counter()
        sums = self.agent.collect_int(seg.chunks * self.plan.k, seg.first_chunk)
        self.seconds["comm"] += time.perf_counter() - t0
        self._update(seg, sums)

    def _update(self, seg: Segment, sums: np.ndarray) -> None:
        t1 = time.perf_counter()
        frac_bits = int(sums[0])  # the segment's header (module plan)
        total = (sums[1:1 + seg.n] * np.ldexp(1.0, -frac_bits)).astype(np.float32)
        self.state.update(seg.local, total / np.float32(self.plan.num_workers))
        self.seconds["adam"] += time.perf_counter() - t1

    def _commit(self) -> None:
        """The step's last layer is updated: commit it and report."""
        t0 = time.perf_counter()
        self.state.commit_step()
        write_status(self.directory, self.status("running"))
        self.seconds["adam"] += time.perf_counter() - t0

    def _run_serial(self) -> None:
        for kind, layer in schedule(len(self.plan.layer_sizes), self.config.steps):
            for seg in self.segments.get(layer, ()):
                if kind == "pull":
                    self._broadcast_run([(seg, None)])
                else:
                    self._collect_and_update(seg)
            if kind == "push":
                if layer == 0:  # pushes walk layers L-1..0: the step's last
                    self._commit()

    def _run_duplex(self) -> None:
        """Collect and update on this thread, the next segment's collect already running while
        one is updated; broadcast on another thread each updated segment, in ``pull_order``
        (the workers fetch in that order), merging the queued ones of a layer into one
        operation."""
        mine = [s for s in pull_order(self.plan) if s.node == self.config.index]
        ready: queue.Queue[tuple[Segment, int | None] | None] = queue.Queue()
        failed: list[BaseException] = []
        sender = threading.Thread(target=self._broadcasts, args=(ready, failed),
                                  name=f"node-{self.config.name}-bcast", daemon=True)
        for seg in mine:
            ready.put((seg, None))
        sender.start()
        items = [seg for _ in range(self.config.steps) for seg in mine]
        try:
            if items:
                self.agent.begin_collect(items[0].chunks * self.plan.k, items[0].first_chunk)
            for at, seg in enumerate(items):
                if failed:
                    raise failed[0]
                t0 = time.perf_counter()
                sums = self.agent.end_collect()
                self.seconds["comm"] += time.perf_counter() - t0
                if at + 1 < len(items):
                    self.agent.begin_collect(items[at + 1].chunks * self.plan.k, items[at + 1].first_chunk)
                generation = self.state.next_generation
                self._update(seg, sums)
                ready.put((seg, generation))
                if seg == mine[-1]:
                    self._commit()
        except BaseException:
            self.pull_agent.close()  # ends a broadcast still waiting
            raise
        finally:
            ready.put(None)
            sender.join()  # a broadcast ends by its chunk deadline at the latest
        if failed:
            raise failed[0]

    def _broadcasts(self, ready: "queue.Queue[tuple[Segment, int | None] | None]",
                    failed: list[BaseException]) -> None:
        """Broadcast what ``ready`` hands over until None; consecutive segments of one layer and
        generation that are already queued go as one operation (fewer lane drains)."""
        try:
            held: tuple[Segment, int | None] | None = None
            stop = False
            while not stop:
                item = held if held is not None else ready.get()
                held = None
                if item is None:
                    break
                run = [item]
                while True:
                    try:
                        nxt = ready.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is None:
                        stop = True
                        break
                    last = run[-1][0]
                    if nxt[1] == run[-1][1] and nxt[0].layer == last.layer and \
                            nxt[0].first_chunk == last.first_chunk + last.chunks:
                        run.append(nxt)
                        continue
                    held = nxt
                    break
                self._broadcast_run(run)
        except BaseException as error:  # raised by the collecting thread
            failed.append(error)

    def _broadcast_run(self, run: list[tuple[Segment, int | None]]) -> None:
        """Segments with consecutive chunks, one generation (None: committed), as one BCAST."""
        t0 = time.perf_counter()
        k = self.plan.k
        first = run[0][0].first_chunk
        out = np.zeros((run[-1][0].first_chunk + run[-1][0].chunks - first) * k, np.int32)
        for seg, generation in run:
            end = seg.local + seg.n
            params = (self.state.read(seg.local, end) if generation is None
                      else self.state.read_written(seg.local, end, generation))
            at = (seg.first_chunk - first) * k
            out[at + 1:at + 1 + seg.n] = params.view(np.int32)
        self.pull_agent.broadcast_int(out, first)
        self.seconds["comm"] += time.perf_counter() - t0


def _run_node(config: NodeConfig) -> int:
    try:
        node = OptimizerNode(config, config.transport, config.pull_transport)
    except (ValueError, TypeError, KeyError, AdamStateError) as error:
        print(f"optimizer node {config.name}: cannot start: {error}", file=sys.stderr)
        return 2
    try:
        node.run()
    except (AggregationError, AgentError) as error:
        write_status(node.directory, node.status("failed", str(error)))
        print(f"optimizer node {config.name}: {error}", file=sys.stderr, flush=True)
        return EXIT_AGGREGATION
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(NodeConfig, _run_node, argv, MODULE)


if __name__ == "__main__":
    sys.exit(main())
