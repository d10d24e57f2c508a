"""The rows and results of ``innet bench``, ``innet demo`` and ``innet bench soak``, typed until written.

Measuring produces these records; ``to_json`` gives the saved document's form (the key
names, order and nesting of ``bench-*.json``, ``demo-*.json`` and ``soak-*.json``), which is
what the renderers (tables, Markdown, plots) read, so a saved file can be rendered again.
Keys follow field order unless a record says otherwise.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from innet.testbed.core.machine import Machine, describe, switch_description
from innet.testbed.core.records import JsonRecord

if TYPE_CHECKING:  # only named here: a compose worker reports without the testbed's backends
    from innet.testbed.ina.config import BenchConfig, SoakConfig

BENCH_FORMAT = "innet-bench/1"
DEMO_FORMAT = "innet-demo/1"


@dataclass(frozen=True)
class Row(JsonRecord):
    """One (collective, N, S, loss) measurement with its theory."""

    collective: str
    workers: int
    elements: int
    loss_pct: float
    ok: bool
    """Every worker got the right sum in every operation."""
    time_mean_s: float
    """Completion time, mean over workers and operations (each worker from its start to its result)."""
    time_max_s: float
    """Slowest worker, mean over operations (the collective's time)."""
    goodput_gbps: float
    """Message bits / ``time_max_s``."""
    switch_pps: float | None
    """Frames all workers sent per second of operation (the switch's ingress rate)."""
    wire_up: float | None
    """Bytes a worker sent per operation (mean over workers), None where not measured."""
    wire_down: float | None
    """Bytes a worker received per operation."""
    wire_source: str | None
    """``hI-eth0`` (interface counters) or ``agent`` (the agent's frames)."""
    theory_time_s: float
    """Cost-model lower bound (links, and for innet also the measured switch rate is NOT assumed)."""
    theory_payload: int
    """Message bytes per worker each way: 2(n-1)/n of the message (ring), the message (innet)."""
    theory_wire: float
    """Bytes on the wire per worker each way with headers (and resends at this loss)."""
    retransmitted: float | None = None
    """innet: chunks retransmitted during one timed operation, summed over the workers and
    averaged over the row's timed operations (warm-up and barriers excluded); None for gloo
    (and for workers that did not report it)."""
    switch_impl: str = "innet"
    """The switch of the testbed (``innet`` or ``bmv2``): gloo's traffic crosses it too."""


@dataclass(frozen=True)
class AllreduceFailure(JsonRecord):
    """A collective that failed on one testbed; the grid goes on with the next."""

    collective: str
    workers: int
    loss_pct: float
    switch_impl: str
    error: str
    """The error's first line."""


@dataclass(frozen=True)
class RunInfo:
    """Where and with what a bench or demo ran, as both documents open."""

    date: str
    """ISO time, seconds; the saved files' stamp."""
    machine: Machine
    """:func:`innet.testbed.core.machine.describe`."""
    backend: str
    switch: str
    """:func:`innet.testbed.core.machine.switch_description` of each switch, ``" | "``-joined."""
    config: BenchConfig
    """The grid; the documents' ``settings`` are its :meth:`~innet.testbed.ina.config.BenchConfig.settings_json`."""

    @classmethod
    def now(cls, config: BenchConfig, backend: str) -> RunInfo:
        """Now, this machine, ``backend`` and the config's switches."""
        return cls(date=dt.datetime.now().isoformat(timespec="seconds"), machine=describe(), backend=backend,
                   switch=" | ".join(switch_description(config.executor, impl) for impl in config.switch_impls),
                   config=config)


@dataclass(frozen=True)
class AllreduceBench:
    """One ``innet bench`` run: every row and failure of the grid."""

    info: RunInfo
    rows: tuple[Row, ...]
    failures: tuple[AllreduceFailure, ...]
    switch_absent: tuple[tuple[str, str], ...] = ()
    """Switch implementations asked for but not installed: (name, why)."""
    partial: bool = False
    """Ctrl-C ended the grid early; the rows are those measured before."""

    def to_json(self) -> dict[str, Any]:
        i = self.info
        return {"format": BENCH_FORMAT, "date": i.date, "machine": i.machine.to_json(), "backend": i.backend,
                "switch": i.switch, "settings": i.config.settings_json(), "rows": [r.to_json() for r in self.rows],
                "failures": [f.to_json() for f in self.failures], "switch_absent": dict(self.switch_absent),
                "partial": self.partial}


@dataclass(frozen=True)
class TrainingResult(JsonRecord):
    """The digits training of ``innet demo``/``innet train`` on the star and its checks."""

    steps: int
    workers: int
    mode: str
    lr: float
    seconds: float
    steps_per_s: float
    """Steps over the slowest worker's own training time."""
    accuracy: float
    float_reference_accuracy: float
    workers_agree: bool
    switch_registers_match: bool
    bit_exact_with_model: bool
    loss_curve: tuple[float, ...]
    """Mean training loss over the workers, per step."""
    float_reference_loss: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "loss_curve": list(self.loss_curve),
                "float_reference_loss": list(self.float_reference_loss)}


@dataclass(frozen=True)
class PartialTraining(JsonRecord):
    """Training stopped by Ctrl-C: the steps each worker finished and the mean loss of those all did."""

    steps: int
    workers: int
    mode: str
    lr: float
    steps_done_per_worker: tuple[int, ...]
    loss_curve: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "steps_done_per_worker": list(self.steps_done_per_worker),
                "loss_curve": list(self.loss_curve)}


@dataclass(frozen=True)
class DemoResult:
    """One ``innet demo``/``innet train``: the training, the allreduce rows, the files written."""

    info: RunInfo
    training: TrainingResult
    rows: tuple[Row, ...]
    seconds: float
    files: tuple[str, ...] = ()
    """JSON and plots written (absent from the JSON file itself, which is written before)."""

    @property
    def good(self) -> bool:
        """The workers agree with each other, the switch's registers and the numpy model, and every
        allreduce row was exact: what ``innet demo`` exits 0 on."""
        t = self.training
        return t.workers_agree and t.switch_registers_match and t.bit_exact_with_model and all(r.ok for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        i = self.info
        out = {"format": DEMO_FORMAT, "date": i.date, "machine": i.machine.to_json(), "backend": i.backend, "switch": i.switch,
               "settings": i.config.settings_json(), "training": self.training.to_json(),
               "rows": [r.to_json() for r in self.rows], "seconds": self.seconds}
        return {**out, "files": list(self.files)} if self.files else out


@dataclass(frozen=True)
class PartialDemo:
    """A demo stopped by Ctrl-C during training (no switch or settings: the testbed is down)."""

    date: str
    machine: Machine
    backend: str
    training: PartialTraining
    seconds: float
    files: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = {"format": DEMO_FORMAT, "date": self.date, "partial": True, "machine": self.machine.to_json(),
               "backend": self.backend, "training": self.training.to_json(), "rows": [], "seconds": self.seconds}
        return {**out, "files": list(self.files)} if self.files else out


@dataclass(frozen=True)
class Round(JsonRecord):
    """One soak round: a worker set's outcome."""

    index: int
    start_s: float
    seconds: float
    kind: str
    """``run`` or ``restart`` (a rank killed mid-operation, then a new set)."""
    operations: int
    exact: bool
    retransmitted: int
    switch_rss_kb: int | None
    counters: dict[str, int] = field(default_factory=dict)
    """The switch's counters after the round."""
    note: str = ""
    """What went wrong, empty when nothing did."""


@dataclass(frozen=True)
class SoakSummary(JsonRecord):
    """The soak's rounds added up."""

    rounds: int
    restarts: int
    operations: int
    inexact_rounds: tuple[int, ...]
    """Indices of the rounds with a wrong result or a wrong exit."""
    retransmitted: int
    switch_rss_kb_first_last_max: tuple[int, int, int] | None
    seconds: float

    @classmethod
    def of(cls, rounds: tuple[Round, ...]) -> SoakSummary:
        rss = [r.switch_rss_kb for r in rounds if r.switch_rss_kb is not None]
        return cls(rounds=len(rounds), restarts=sum(r.kind == "restart" for r in rounds),
                   operations=sum(r.operations for r in rounds),
                   inexact_rounds=tuple(r.index for r in rounds if not r.exact),
                   retransmitted=sum(r.retransmitted for r in rounds),
                   switch_rss_kb_first_last_max=(rss[0], rss[-1], max(rss)) if rss else None,
                   seconds=(rounds[-1].start_s + rounds[-1].seconds) if rounds else 0.0)

    def to_json(self) -> dict[str, Any]:
        rss = self.switch_rss_kb_first_last_max
        return {**asdict(self), "inexact_rounds": list(self.inexact_rounds),
                "switch_rss_kb_first_last_max": list(rss) if rss is not None else None}


@dataclass(frozen=True)
class SoakResult:
    """``innet bench soak``: its settings (as JSON), every round and their sum."""

    config: SoakConfig
    rounds: tuple[Round, ...]
    partial: bool

    @property
    def summary(self) -> SoakSummary:
        return SoakSummary.of(self.rounds)

    def to_json(self) -> dict[str, Any]:
        return {"config": self.config.to_json(), "rounds": [r.to_json() for r in self.rounds],
                "summary": self.summary.to_json(), "partial": self.partial}


@dataclass(frozen=True)
class TrainReport(JsonRecord):
    """A compose worker's demo training: whether it ended bit-exact with the switch's numpy model."""

    steps: int
    sha256: str
    """Of the final int32 parameters."""
    bit_exact: bool
    accuracy: float
    seconds: float


@dataclass(frozen=True)
class WorkerReport:
    """What a compose (or cluster) worker reports: its exact allreduce, then its training."""

    rank: int
    host: str
    elements: int
    k: int
    ok: bool
    """The allreduce's sum was exact."""
    sha256: str
    head: tuple[int, ...]
    """The first values of the sum, for a reader of the log."""
    seconds: float
    epoch: int
    train: TrainReport | None
    """None when the job had no training."""

    @property
    def good(self) -> bool:
        """Exact, and bit-exact in training when it trained."""
        return self.ok and (self.train is None or self.train.bit_exact)

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "host": self.host, "elements": self.elements, "k": self.k, "ok": self.ok,
                "sha256": self.sha256, "head": list(self.head), "seconds": self.seconds, "epoch": self.epoch,
                "train": self.train.to_json() if self.train is not None else None}
