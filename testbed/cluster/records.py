"""The rows of ``innet bench cluster``, typed until they are written.

The bench measures into these records; ``to_json`` gives the saved document's form (the key
names, order and nesting of ``bench_cluster-*.json``), which :func:`~innet.testbed.cluster.bench.table`
and :func:`~innet.testbed.cluster.bench.plot` read, so a saved file can be rendered again. The
row kinds differ in their keys, as the documents have always had them: the swarm's allreduces
and trainings, the Mininet star's allreduces, failures and trainings; each row's JSON opens
with ``where`` (``cluster`` or ``mininet``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from innet.testbed.core.machine import Machine
from innet.testbed.luwu.records import ModeRow

FORMAT = "innet-bench-cluster/1"
CAVEAT = ("every swarm node and the Mininet star share this machine's cores: the step times measure "
          "the engine's cost (container networking, VXLAN overlay), not scale; the bytes per worker "
          "carry over to real machines")
"""The note every document carries."""


@dataclass(frozen=True)
class ClusterAllreduceRow:
    """One N's exact allreduces on the swarm (``ina`` through the switch service, or ``gloo``)."""

    workload: str
    workers: int
    elements: int
    k: int
    ok: bool
    """Every rank's sum was exact."""
    step_s: float
    """Mean over the timed operations of the slowest rank's time."""
    step_s_min: float
    wire_up_bytes: float
    """Bytes a worker's task interface sent per operation (inner frames)."""
    wire_down_bytes: float
    underlay_up_bytes: float
    """``wire_up_bytes`` with the overlay's encapsulation per packet."""
    tx_packets: float
    nodes: tuple[str, ...]
    """The swarm nodes the worker tasks ran on."""
    first_step_s: float
    """From ``docker stack deploy`` to the first rank's first allreduce done."""

    def to_json(self) -> dict[str, Any]:
        return {"where": "cluster", "workload": self.workload, "workers": self.workers, "elements": self.elements,
                "k": self.k, "ok": self.ok, "step_s": self.step_s, "step_s_min": self.step_s_min,
                "wire_up_bytes": self.wire_up_bytes, "wire_down_bytes": self.wire_down_bytes,
                "underlay_up_bytes": self.underlay_up_bytes, "tx_packets": self.tx_packets,
                "nodes": list(self.nodes), "first_step_s": self.first_step_s}


@dataclass(frozen=True)
class ClusterTrainingRow:
    """One N's LuWu or DDP + gloo training on the swarm, made as the star's rows are."""

    workers: int
    k: int
    ok: bool
    step_s: float | None
    """Median over the timed steps of the slowest rank's step; None when a worker did not finish."""
    step_s_p90: float | None
    wire_up_bytes: float | None
    """Bytes a worker's overlay interface sent per timed step; None without every worker's counters."""
    wire_down_bytes: float | None
    underlay_up_bytes: float | None
    tx_packets: float | None
    nodes: tuple[str, ...]
    detail: ModeRow
    """The row :func:`innet.testbed.luwu.bench.measure_row` made of the trainers' reports."""

    @property
    def workload(self) -> str:
        """The detail's mode (``ddp-gloo``, ``luwu (one job)``)."""
        return self.detail.mode

    def to_json(self) -> dict[str, Any]:
        m = self.detail.measures
        return {"where": "cluster", "workload": self.workload, "workers": self.workers, "k": self.k, "ok": self.ok,
                "step_s": self.step_s, "step_s_p90": self.step_s_p90, "wire_up_bytes": self.wire_up_bytes,
                "wire_down_bytes": self.wire_down_bytes, "underlay_up_bytes": self.underlay_up_bytes,
                "tx_packets": self.tx_packets, "nodes": list(self.nodes),
                "accuracy": m.accuracy if m is not None else None, "detail": self.detail.to_json()}


@dataclass(frozen=True)
class StarAllreduceRow:
    """One (collective, N) of ``innet bench`` on the unshaped Mininet star."""

    workload: str
    workers: int
    elements: int
    ok: bool
    step_s: float
    """The collective's time: its slowest worker, mean over the operations."""
    wire_up_bytes: float | None
    wire_down_bytes: float | None

    def to_json(self) -> dict[str, Any]:
        return {"where": "mininet", "workload": self.workload, "workers": self.workers, "elements": self.elements,
                "ok": self.ok, "step_s": self.step_s, "wire_up_bytes": self.wire_up_bytes,
                "wire_down_bytes": self.wire_down_bytes}


@dataclass(frozen=True)
class StarFailure:
    """A collective that failed on the Mininet star."""

    workload: str
    workers: int
    error: str

    @property
    def ok(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        return {"where": "mininet", "workload": self.workload, "workers": self.workers, "ok": False,
                "error": self.error}


@dataclass(frozen=True)
class StarTrainingRow:
    """One mode at one N of ``innet bench luwu`` on the unshaped Mininet star."""

    workload: str
    workers: int
    ok: bool
    step_s: float | None
    step_s_p90: float | None
    wire_up_bytes: float | None
    wire_down_bytes: float | None
    accuracy: float | None

    @classmethod
    def of(cls, row: ModeRow) -> StarTrainingRow:
        m, link = row.measures, row.link
        return cls(workload=row.mode, workers=row.workers, ok=m is not None,
                   step_s=m.step_ms / 1e3 if m is not None else None,
                   step_s_p90=m.step_ms_p90 / 1e3 if m is not None else None,
                   wire_up_bytes=link.up if link is not None else None,
                   wire_down_bytes=link.down if link is not None else None,
                   accuracy=m.accuracy if m is not None else None)

    def to_json(self) -> dict[str, Any]:
        return {"where": "mininet", "workload": self.workload, "workers": self.workers, "ok": self.ok,
                "step_s": self.step_s, "step_s_p90": self.step_s_p90, "wire_up_bytes": self.wire_up_bytes,
                "wire_down_bytes": self.wire_down_bytes, "accuracy": self.accuracy}


BenchRow = Union[ClusterAllreduceRow, ClusterTrainingRow, StarAllreduceRow, StarFailure, StarTrainingRow]
"""A row of the document, of either side."""


@dataclass(frozen=True)
class Deployment:
    """One stack's deployment: how long each step took."""

    workers: int
    workload: str
    first_step_s: float | None
    """Deploy to the first allreduce done (allreduce stacks; None for trainings)."""
    stack_deploy_s: float
    all_results_s: float
    """Deploy to every rank's result."""
    stack_rm_s: float

    def to_json(self) -> dict[str, Any]:
        return {"workers": self.workers, "workload": self.workload, "first_step_s": self.first_step_s,
                "stack_deploy_s": self.stack_deploy_s, "all_results_s": self.all_results_s,
                "stack_rm_s": self.stack_rm_s}


@dataclass(frozen=True)
class ClusterSide:
    """The swarm's part of the run apart from its rows: the image and every deployment."""

    image: str
    build_check_s: float
    push_s: float
    deployments: tuple[Deployment, ...]
    lab_up_s: float | None = None
    """Seconds the bench's own lab took to come up; None on a lab it was given."""

    def to_json(self) -> dict[str, Any]:
        return {"image": self.image, "build_check_s": self.build_check_s, "push_s": self.push_s,
                "deployments": [d.to_json() for d in self.deployments], "lab_up_s": self.lab_up_s}


@dataclass(frozen=True)
class ClusterBench:
    """One ``innet bench cluster`` run: both sides' rows and the deployments."""

    date: str
    machine: Machine
    """:func:`innet.testbed.core.machine.describe`."""
    settings: dict[str, Any]
    """The run's :class:`~innet.testbed.cluster.bench.ClusterBenchConfig` as JSON."""
    deployment: ClusterSide
    rows: tuple[BenchRow, ...]
    files: tuple[str, ...]
    """The star side's own files (its ``innet bench`` and ``innet bench luwu`` documents)."""
    not_measured: dict[str, str]
    """What was left out -> the option that left it out."""
    partial: bool
    """The cluster side only (the star's not run yet, or stopped by Ctrl-C)."""

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "date": self.date, "machine": self.machine.to_json(), "settings": self.settings,
                "deployment": self.deployment.to_json(), "rows": [r.to_json() for r in self.rows],
                "files": list(self.files), "not_measured": self.not_measured, "partial": self.partial,
                "caveat": CAVEAT}
