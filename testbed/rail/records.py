"""The rows rail workloads and benchmarks hand each other, typed until they are written.

Each record is frozen and turns into the JSON object the saved documents hold with
``to_json`` (keys in field order, so a document reads the same whichever code wrote it);
the documents' renderers (tables, Markdown, plots) read that JSON, so a saved file can be
rendered again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from innet.testbed.core.records import JsonRecord


@dataclass(frozen=True)
class CollectiveRow(JsonRecord):
    """One collective at one size in ``innet bench --topo rail-*``: per timed operation the
    slowest GPU's time (the collective ends when the last GPU has it)."""

    collective: str
    size: int
    unit: str
    """``elements`` (int32 per GPU, allreduce) or ``bytes/pair`` (all-to-all)."""
    median_s: float
    min_s: float
    times: tuple[float, ...]
    ok: bool
    """Every GPU's result was exact."""
    model_s: float | None
    """:mod:`innet.testbed.rail.models.railperf`'s time on the shaped links; None unshaped."""
    switch_impl: str

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "times": list(self.times)}


@dataclass(frozen=True)
class Amdahl(JsonRecord):
    """The all-to-all slowdown weighed by its share of an MoE iteration's traffic."""

    a2a_share: float
    total: float
    paper_a2a_share: float
    paper_totals: tuple[float, float]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "paper_totals": list(self.paper_totals)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Amdahl:
        """The record again from its saved JSON (a document's ``amdahl`` object)."""
        low, high = data["paper_totals"]
        return cls(data["a2a_share"], data["total"], data["paper_a2a_share"], (low, high))


@dataclass(frozen=True)
class AllToAllSlowdown(JsonRecord):
    """Rail-only's all-to-all (two-step) over rail-optimized's (direct), measured in one run."""

    pair_bytes: int
    measured: float
    runs: int
    spread: tuple[float, float]
    """The least and the largest slowdown of the i-th fastest runs paired."""
    model: float
    seed_estimate: float
    amdahl: Amdahl
    switch_impl: str

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "spread": list(self.spread), "amdahl": self.amdahl.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AllToAllSlowdown:
        """The record again from its saved JSON (an entry of a document's ``alltoall_slowdown``;
        documents from before ``switch_impl`` was recorded read as innet-switch's)."""
        low, high = data["spread"]
        return cls(data["pair_bytes"], data["measured"], data["runs"], (low, high), data["model"],
                   data["seed_estimate"], Amdahl.from_json(data["amdahl"]), data.get("switch_impl", "innet"))


@dataclass(frozen=True)
class BenchFailure(JsonRecord):
    """A bring-up or collective that failed; the benchmark goes on with the next."""

    collective: str
    switch_impl: str
    error: str


@dataclass(frozen=True)
class NotApplicable(JsonRecord):
    """A collective the topology's design does not have, and why."""

    collective: str
    reason: str


def config_json(config: Any) -> dict[str, Any]:
    """A run's config dataclass as its saved documents hold it (the output folder as a string)."""
    return {**asdict(config), "out_dir": str(config.out_dir)}


@dataclass(frozen=True)
class DemoRow(JsonRecord):
    """One collective of ``innet demo --topo rail-*`` (median of the slowest GPU's times)."""

    collective: str
    size: int
    median_s: float
    ok: bool
    model_s: float | None = None
    modelled: bool = False
    """The row has a model column (the all-to-all's; None when the links are unshaped)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"collective": self.collective, "size": self.size, "median_s": self.median_s,
                               "ok": self.ok}
        if self.modelled:
            out["model_s"] = self.model_s
        return out


@dataclass(frozen=True)
class TrainingSummary(JsonRecord):
    """The digits training of ``innet demo``/``innet train`` on the rail switches and its checks."""

    model: str
    mode: str
    lr: float
    beta: float
    steps: int
    gpus: int
    parameters: int
    seconds: float
    shards: dict[str, int]
    """Parameter chunks each rail switch holds."""
    accuracy: float
    float_reference_accuracy: float
    loss_first: float
    loss_last: float
    workers_agree: bool
    switch_registers_match: bool
    bit_exact_with_model: bool


@dataclass(frozen=True)
class FailoverTimes(JsonRecord):
    """What a spare HB domain's take-over did and how long each part took
    (:func:`innet.testbed.rail.spare.run_digits_failover`)."""

    rank: int
    spare: str
    """``cold`` (started at the take-over) or ``warm`` (started with the job)."""
    failed_domain: int
    spare_domain: int
    kill_at_completions: int
    resume_step: int
    applied_chunks_of_step: int
    chunks_per_step: int
    kill_to_reaped_s: float
    settle_s: float
    read_state_s: float
    reprogram_s: float
    spawn_s: float
    spare_ready_s: float
    spare_first_step_s: float
    recovery_s: float
    normal_step_s: float | None
    slowest_step_s: float | None


@dataclass(frozen=True)
class FailoverRow(JsonRecord):
    """One take-over of ``innet bench rail-failover`` and whether the run ended where an
    uninterrupted one does."""

    times: FailoverTimes
    exact: bool

    def to_json(self) -> dict[str, Any]:
        return {**self.times.to_json(), "exact": self.exact}


@dataclass(frozen=True)
class FailoverBench:
    """One ``innet bench rail-failover``: the uninterrupted reference's check and every take-over."""

    topology: str
    backend: str
    steps: int
    window: int
    model_exact: bool | None
    """The uninterrupted run was bit-exact with the numpy model; None when Ctrl-C came before it ended."""
    rows: tuple[FailoverRow, ...]
    partial: bool
    """Ctrl-C ended the runs early; the rows are those done before."""
    file: str | None = None
    """Where the document was written (absent from the document itself, written before)."""

    @property
    def good(self) -> bool:
        """The reference matched the model and every take-over ended where it did."""
        return bool(self.model_exact) and all(r.exact for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        return {"topology": self.topology, "backend": self.backend, "steps": self.steps, "window": self.window,
                "model_exact": self.model_exact, "rows": [r.to_json() for r in self.rows], "partial": self.partial}
