"""The rows of ``innet bench luwu`` and ``innet bench luwu-node``, typed until they are written.

A row is measured into these records; ``to_json`` gives the saved document's form (the key
names, order and nesting of ``bench_luwu-*.json`` and ``bench_luwu_node.json``), which the
plots read, so a saved file can be plotted again. A part a run did not measure (a failed
mode's numbers, link counters on loopback, the hook's split outside ``ddp-innet``) is None
here and absent from the JSON, as the documents have always had it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from innet.testbed.core.machine import Machine
from innet.testbed.core.records import JsonRecord
from innet.testbed.luwu.status import NodeStatus, UnreadNodeStatus

NODE_STATUS_KEYS = ("rss_bytes", "bytes_on_disk", "bytes_state", "bytes_working_set", "step", "seconds")
"""What a row keeps of optimizer node 0's final status (:class:`NodeStatus` fields, its JSON keys)."""


@dataclass(frozen=True)
class StepMeasures(JsonRecord):
    """What every mode's row has once all its workers finished."""

    params: int
    step_ms: float
    """Median over the timed steps of the slowest worker's step."""
    step_ms_p90: float
    timed_steps: int
    bytes_per_worker_step: float
    """Both directions: innet from the agents' frames, gloo from the collective's theory."""
    bytes_source: str
    """``agent frames`` or ``theory``."""
    worker_rss_mb: float
    worker_rss_peak_mb: float
    worker_tensor_bytes_peak: int
    accuracy: float


@dataclass(frozen=True)
class LinkBytes:
    """Mean bytes per timed step on a worker's own link (Mininet: its namespace's counters)."""

    up: float
    down: float

    def to_json(self) -> dict[str, Any]:
        return {"link_up_bytes_per_step": self.up, "link_down_bytes_per_step": self.down}


@dataclass(frozen=True)
class HookSplit(JsonRecord):
    """The ``ddp-innet`` hook's own split of its time, per step, mean over the workers."""

    buckets: float
    seconds: float
    stage_seconds: float
    agent_seconds: float


@dataclass(frozen=True)
class LuwuOverlap:
    """LuWu's tensors between steps, its communication thread's time and node 0's status."""

    worker_tensor_bytes_between_steps: int
    comm_busy_ms_per_step: float
    comm_wait_ms_per_step: float | None
    """Overlapped only: forward waiting for a pull in ``take``, warm-up excluded."""
    compute_ms_per_step: float | None
    """Overlapped only: the step less that wait."""
    node: tuple[tuple[str, Any], ...]
    """:data:`NODE_STATUS_KEYS` of node 0's status (None where it has no such key)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"worker_tensor_bytes_between_steps": self.worker_tensor_bytes_between_steps,
                               "comm_busy_ms_per_step": self.comm_busy_ms_per_step}
        if self.comm_wait_ms_per_step is not None:
            out["comm_wait_ms_per_step"] = self.comm_wait_ms_per_step
            out["compute_ms_per_step"] = self.compute_ms_per_step
        return {**out, "node": dict(self.node)}


@dataclass(frozen=True)
class ModeContext:
    """What the benchmark adds to a row from the testbed around the mode."""

    wire_bytes_per_worker_step: float | None
    """Sent + received per worker link per step, start-up included; None on loopback."""
    switch_cpu_s_per_step: float | None
    """The switch process's CPU seconds per step (start-up of the mode included)."""
    load_average: tuple[str, str]
    """The machine's load averages before and after the mode."""


@dataclass(frozen=True)
class ModeRow:
    """One mode at one N of ``innet bench luwu`` (or a cluster's training at one N)."""

    mode: str
    """The run mode, with `` (serialized)`` / `` (one job)`` for those variants."""
    workers: int
    errors: dict[str, str]
    """Process name -> its log tail, for processes that failed."""
    seconds: float
    failed: str | None = None
    """Why the row has no numbers (workers that did not finish); None when it has them."""
    measures: StepMeasures | None = None
    cpu_s_per_step: tuple[float, float] | None = None
    """CPU seconds per timed step summed over the workers: (trainers, agents)."""
    link: LinkBytes | None = None
    hook: HookSplit | None = None
    luwu: LuwuOverlap | None = None
    testbed: ModeContext | None = None

    @property
    def step_ms(self) -> float | None:
        return self.measures.step_ms if self.measures is not None else None

    def cpu_json(self) -> dict[str, float]:
        out = {} if self.cpu_s_per_step is None else {"trainers": self.cpu_s_per_step[0],
                                                       "agents": self.cpu_s_per_step[1]}
        if self.testbed is not None and self.testbed.switch_cpu_s_per_step is not None:
            out["switch (whole run)"] = self.testbed.switch_cpu_s_per_step
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "workers": self.workers, "errors": self.errors,
                               "seconds": self.seconds}
        if self.failed is not None:
            out["failed"] = self.failed
        if self.measures is not None:
            out.update(self.measures.to_json())
        cpu = self.cpu_json()
        if self.cpu_s_per_step is not None:
            out["cpu_s_per_step"] = cpu
        if self.link is not None:
            out.update(self.link.to_json())
        if self.hook is not None:
            out["hook"] = self.hook.to_json()
        if self.luwu is not None:
            out.update(self.luwu.to_json())
        if self.testbed is not None:
            out["wire_bytes_per_worker_step"] = self.testbed.wire_bytes_per_worker_step
            if cpu and self.cpu_s_per_step is None:
                out["cpu_s_per_step"] = cpu
            out["load_average"] = list(self.testbed.load_average)
        return out


@dataclass(frozen=True)
class LuwuBenchSettings(JsonRecord):
    """What every mode of a run shared, as the document's ``settings``."""

    steps: int
    warmup: int
    batch: int
    model: str
    """The model's description (layer widths, parameters, data)."""
    params: int
    k: int
    window: int
    mtu: int
    nodes: int
    lr: float


@dataclass(frozen=True)
class LuwuBench:
    """One ``innet bench luwu`` run: every mode at every N, and the speedups between them."""

    date: str
    machine: Machine
    """:func:`innet.testbed.core.machine.describe`."""
    backend: str
    switch: str
    load_average_start: str
    load_average_end: str
    settings: LuwuBenchSettings
    rows: tuple[ModeRow, ...]
    summary: dict[int, dict[str, float]]
    """Per N, speedup name -> factor (:func:`innet.testbed.luwu.bench.summary`)."""
    partial: bool
    files: tuple[str, ...] = ()
    """JSON and plot written (absent from the JSON file itself, which is written before)."""

    FORMAT = "innet-bench-luwu/3"

    def to_json(self) -> dict[str, Any]:
        out = {"format": self.FORMAT, "date": self.date, "machine": self.machine.to_json(), "backend": self.backend,
               "switch": self.switch, "load_average_start": self.load_average_start,
               "load_average_end": self.load_average_end, "settings": self.settings.to_json(),
               "rows": [r.to_json() for r in self.rows], "summary": self.summary, "partial": self.partial}
        return {**out, "files": list(self.files)} if self.files else out


@dataclass(frozen=True)
class NodeRun(JsonRecord):
    """The out-of-core node's process: opening the shard, every timed step's update and commit."""

    open_seconds: float
    update_seconds: list[float]
    commit_seconds: list[float]
    native: bool
    """The native update kernel ran (not numpy's)."""
    peak_rss_bytes: int
    working_set_bytes: int


@dataclass(frozen=True)
class TorchRun(JsonRecord):
    """``torch.optim.Adam``/``AdamW`` (foreach) in memory on the same sizes."""

    update_seconds: list[float]
    threads: int
    version: str
    peak_rss_bytes: int


@dataclass(frozen=True)
class NodeBenchRow:
    """One optimizer of ``innet bench luwu-node``: node and torch on one shard size."""

    optimizer: str
    params: int
    create_seconds: float
    """The setup process's time to create the state from the initial shard."""
    node: NodeRun
    torch: TorchRun
    node_params_per_s: float
    node_with_commit_params_per_s: float
    torch_params_per_s: float
    ratio: float
    """Node throughput over torch's (median step times)."""
    ratio_with_commit: float
    state_bytes: int
    """Parameters and both moments, old and new generation."""

    def to_json(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer, "params": self.params, "setup": {"create_seconds": self.create_seconds},
                "node": self.node.to_json(), "torch": self.torch.to_json(),
                "node_params_per_s": self.node_params_per_s,
                "node_with_commit_params_per_s": self.node_with_commit_params_per_s,
                "torch_params_per_s": self.torch_params_per_s, "ratio": self.ratio,
                "ratio_with_commit": self.ratio_with_commit, "state_bytes": self.state_bytes}


@dataclass(frozen=True)
class StepReport:
    """One training step as a trainer process reports it (a JSON line)."""

    step: int
    loss: float
    seconds: float
    wait_seconds: float | None = None
    """LuWu: of the step, forward blocked waiting for pulls (the rest is compute)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "loss": self.loss, "seconds": self.seconds}
        return out if self.wait_seconds is None else {**out, "wait_seconds": self.wait_seconds}


@dataclass(frozen=True)
class LinkCount(JsonRecord):
    """This host's link over the timed steps (``/proc/net/dev`` of its namespace)."""

    steps: int
    sent_bytes: int
    received_bytes: int
    sent_packets: int
    received_packets: int


@dataclass(frozen=True)
class CpuPerStep(JsonRecord):
    """CPU seconds per timed step of the trainer (every thread) and of its agent process(es)."""

    trainer: float
    agent: float


@dataclass(frozen=True)
class LuwuComm(JsonRecord):
    """A LuWu worker's communication thread, over the run."""

    push_seconds: float
    pull_seconds: float
    wait_seconds: float
    saturated: int
    """Chunks sent while the window was full (the agents' count)."""


@dataclass(frozen=True)
class HookComm(JsonRecord):
    """The ``ddp-innet`` hook's buckets and where its time went, over the run."""

    buckets: int
    seconds: float
    saturated: int
    stage_seconds: float
    agent_seconds: float


@dataclass(frozen=True)
class TrainerFinal:
    """A trainer process's final report (its last JSON line, ``"final": true``)."""

    mode: str
    rank: int
    accuracy: float
    rss_bytes: int
    rss_peak_bytes: int
    step_seconds: list[float]
    params: int
    tensor_bytes_peak: int
    """Parameters, gradients and optimizer state at their peak (LuWu: parameters materialized;
    FSDP: the shards plus twice the largest layer)."""
    link: LinkCount | None = None
    cpu_per_step: CpuPerStep | None = None
    tensor_bytes_between_steps: int | None = None
    """LuWu: parameters still materialized between steps."""
    comm: LuwuComm | HookComm | None = None
    step_wait_seconds: list[float] | None = None
    """LuWu: per step, the time forward waited for pulls."""
    agent_stats: dict[str, int] | None = None
    """The agent's protocol counters (innet modes)."""
    pull_agent_stats: dict[str, int] | None = None
    """A duplex LuWu worker's second agent's counters."""

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TrainerFinal:
        """The report a trainer printed as its final JSON line (or a cluster worker's result
        document carried as ``"final"``): the wire edge where the report becomes typed again.
        A line without ``rss_peak_bytes`` (older trainers) peaks at its ``rss_bytes``."""
        comm = doc.get("comm")
        link, cpu = doc.get("link"), doc.get("cpu_per_step")
        try:
            return cls(
                mode=str(doc["mode"]), rank=int(doc["rank"]), accuracy=float(doc["accuracy"]),
                rss_bytes=int(doc["rss_bytes"]), rss_peak_bytes=int(doc.get("rss_peak_bytes", doc["rss_bytes"])),
                step_seconds=[float(t) for t in doc["step_seconds"]], params=int(doc["params"]),
                tensor_bytes_peak=int(doc["tensor_bytes_peak"]),
                link=LinkCount(**link) if link is not None else None,
                cpu_per_step=CpuPerStep(**cpu) if cpu is not None else None,
                tensor_bytes_between_steps=doc.get("tensor_bytes_between_steps"),
                comm=(LuwuComm(**comm) if "push_seconds" in comm else HookComm(**comm)) if comm is not None else None,
                step_wait_seconds=doc.get("step_wait_seconds"), agent_stats=doc.get("agent_stats"),
                pull_agent_stats=doc.get("pull_agent_stats"))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"trainer final report: {type(error).__name__} {error} in {dict(doc)!r:.200}") from None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"final": True, "mode": self.mode, "rank": self.rank, "accuracy": self.accuracy,
                               "rss_bytes": self.rss_bytes, "rss_peak_bytes": self.rss_peak_bytes,
                               "step_seconds": self.step_seconds, "params": self.params}
        allreduce = self.mode.startswith("allreduce")
        if allreduce:  # the bare collectives say their tensors first, as the trainers always have
            out["tensor_bytes_peak"] = self.tensor_bytes_peak
        if self.link is not None:
            out["link"] = self.link.to_json()
        if self.cpu_per_step is not None:
            out["cpu_per_step"] = self.cpu_per_step.to_json()
        if not allreduce:
            out["tensor_bytes_peak"] = self.tensor_bytes_peak
        if self.tensor_bytes_between_steps is not None:
            out["tensor_bytes_between_steps"] = self.tensor_bytes_between_steps
        if self.comm is not None:
            out["comm"] = self.comm.to_json()
        if self.step_wait_seconds is not None:
            out["step_wait_seconds"] = self.step_wait_seconds
        if self.agent_stats is not None:
            out["agent_stats"] = self.agent_stats
        if self.pull_agent_stats is not None:
            out["pull_agent_stats"] = self.pull_agent_stats
        return out


@dataclass(frozen=True)
class DemoCurves:
    """Per mode (``local``, ``luwu``, ``ddp-innet``) of ``innet demo --mode luwu``: a number
    or a curve, None where the mode did not get that far."""

    local: Any
    luwu: Any = None
    ddp_innet: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"local": self.local, "luwu": self.luwu, "ddp-innet": self.ddp_innet}


@dataclass(frozen=True)
class LuwuDemoResult:
    """``innet demo --mode luwu`` (or ``innet train --mode luwu``) as it ended."""

    date: str
    machine: Machine
    backend: str
    switch: str
    k: int
    bring_up_seconds: float
    median_step_seconds: tuple[float | None, float | None]
    """(LuWu, DDP + innet): median over the ranks' steps after the first."""
    settings: dict[str, str]
    """The demo's config, every value as text."""
    accuracy: DemoCurves
    loss: DemoCurves
    """Mean training loss over the workers, per step."""
    nodes: tuple[NodeStatus | UnreadNodeStatus, ...]
    """The optimizer nodes' final status (saved as their ``status.json``)."""
    errors: dict[str, str]
    """Process name -> its log tail, for processes that failed."""

    FORMAT = "innet-demo-luwu/1"

    @property
    def good(self) -> bool:
        """No process failed and LuWu's test accuracy is within 0.01 of local Adam's: what
        ``innet demo --mode luwu`` exits 0 on."""
        luwu, local = self.accuracy.luwu, self.accuracy.local
        return not self.errors and luwu is not None and abs(luwu - local) <= 0.01

    def to_json(self) -> dict[str, Any]:
        luwu, ddp = self.median_step_seconds
        return {"format": self.FORMAT, "date": self.date, "machine": self.machine.to_json(), "backend": self.backend,
                "switch": self.switch, "k": self.k, "bring_up_seconds": self.bring_up_seconds,
                "median_step_seconds": {"luwu": luwu, "ddp-innet": ddp}, "settings": self.settings,
                "accuracy": self.accuracy.to_json(), "loss": self.loss.to_json(),
                "nodes": [n.to_json() for n in self.nodes],
                "errors": self.errors}


@dataclass(frozen=True)
class PartialLuwuDemo:
    """A LuWu demo stopped by Ctrl-C: the stage it was in and the losses of the runs that finished."""

    settings: dict[str, str]
    stage: str
    """``local reference``, ``bring-up``, ``luwu`` or ``ddp-innet``."""
    loss: dict[str, list[float]]
    """Mode -> its loss curve, for the modes that finished."""
    file: str
    """Where this was written."""

    def to_json(self) -> dict[str, Any]:
        return {"format": LuwuDemoResult.FORMAT, "partial": True, "settings": self.settings, "stage": self.stage,
                "loss": self.loss, "file": self.file}
