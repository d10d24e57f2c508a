"""What ``innet geo bench`` measured, as typed records with the JSON the benchmark writes.

Running produces these records and reporting reads them; ``to_json`` gives the document's
form (the key names and nesting of the saved ``geo-bench-*.json`` files), so a record is the
only thing that crosses from one part of the benchmark to another. Rows of a pipeline and of
data parallel carry different measurements, so they are two records over one common part.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from innet.testbed.core.machine import Machine


Curve = tuple[tuple[float, ...], ...]
"""Points of a curve: ``(t, value)`` for training loss, ``(t, step, value)`` for test metrics."""


def _curve(points: Curve) -> list[list[float]]:
    return [list(p) for p in points]


@dataclass(frozen=True)
class TrainPoint:
    """One training step as the last stage (or data-parallel site 0) reported it: seconds of
    training so far and the step's mean training loss."""

    t: float
    loss: float

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> "TrainPoint":
        """From a process's ``step`` line (the JSON edge: other keys are ignored)."""
        return cls(float(record["t"]), float(record["loss"]))


@dataclass(frozen=True)
class EvalPoint:
    """One evaluation on the test set: seconds of training so far, the step after which it ran,
    test accuracy and test loss."""

    t: float
    step: int
    accuracy: float
    loss: float

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> "EvalPoint":
        """From a process's ``eval`` line (the JSON edge: other keys are ignored)."""
        return cls(float(record["t"]), int(record["step"]), float(record["accuracy"]), float(record["loss"]))


@dataclass(frozen=True)
class StageDone:
    """What a pipeline stage reported when it finished (its ``done`` line): the probe of its next
    link, the compression and bytes of its messages both ways, and its in-site reduction time."""

    stage: int
    reduce_s: float
    sent_next: int
    """Bytes this stage sent to the next stage during training (probes excluded)."""
    sent_prev: int
    bytes_next: int
    """Bytes of the training messages to the next stage (what the cost model is given)."""
    bytes_prev: int
    codecs_next: dict[str, int]
    """Messages to the next stage per codec (``dense``, ``int8``, ``top-k+int8``, ...)."""
    codecs_prev: dict[str, int]
    sizes_next: tuple[int, ...]
    """Each message's bytes to the next stage, in order."""
    ratios_next: tuple[float, ...]
    """AdaTopK's ratio per message to the next stage."""
    rates_next_bps: tuple[float, ...]
    """The next link's rate as metered, per message."""
    mean_ratio_next: float | None = None
    bandwidth_next_bps: float | None = None
    """The start-up probe's rate of the next link (None: not probed, or the last stage)."""
    delay_next_s: float | None = None
    measured_rate_next_bps: float | None = None

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> "StageDone":
        """From a stage process's ``done`` line (the JSON edge: other keys are ignored)."""
        def opt(key: str) -> float | None:
            value = record.get(key)
            return None if value is None else float(value)

        return cls(int(record["stage"]), float(record["reduce_s"]), int(record["sent_next"]), int(record["sent_prev"]),
                   int(record["bytes_next"]), int(record["bytes_prev"]), dict(record.get("codecs_next") or {}),
                   dict(record.get("codecs_prev") or {}), tuple(record.get("sizes_next") or ()),
                   tuple(record.get("ratios_next") or ()), tuple(record.get("rates_next_bps") or ()),
                   opt("mean_ratio_next"), opt("bandwidth_next_bps"), opt("delay_next_s"), opt("measured_rate_next_bps"))


@dataclass(frozen=True)
class LinkCheck:
    """One pipeline boundary's WAN link as configured and as the stages' start-up probe measured it."""

    link: str
    configured_mbps: float
    configured_delay_ms: float
    probed_mbps: float
    probed_delay_ms: float
    within_tolerance: bool
    """Rate and delay both within the benchmark's tolerance of the configuration."""

    def to_json(self) -> dict[str, Any]:
        return {"link": self.link, "configured_mbps": self.configured_mbps,
                "configured_delay_ms": self.configured_delay_ms, "probed_mbps": self.probed_mbps,
                "probed_delay_ms": self.probed_delay_ms, "within_tolerance": self.within_tolerance}


@dataclass(frozen=True)
class DetectedStraggler:
    """A straggler the online detector named: its site and stage, when, and its compute windows."""

    site: str
    stage: int
    step: int
    factor: float
    baseline_s: float
    recent_s: float

    def to_json(self) -> dict[str, Any]:
        return {"site": self.site, "stage": self.stage, "step": self.step, "factor": self.factor,
                "baseline_s": self.baseline_s, "recent_s": self.recent_s}


@dataclass(frozen=True)
class ReplanPrediction:
    """The plan OP-Fence would make with a straggler's measured speed, beside keeping the plan."""

    sites: tuple[str, ...]
    cuts: tuple[int, ...]
    predicted_step_s: float
    kept_plan_predicted_step_s: float

    def to_json(self) -> dict[str, Any]:
        return {"sites": list(self.sites), "cuts": list(self.cuts), "predicted_step_s": self.predicted_step_s,
                "kept_plan_predicted_step_s": self.kept_plan_predicted_step_s}


@dataclass(frozen=True)
class StragglerEffect:
    """What a scripted mid-run slowdown did to the step and to the slowed stage's compute."""

    site: str
    step: int
    share: float
    stage: int
    step_before_s: float | None
    step_after_s: float | None
    compute_before_s: float | None
    compute_after_s: float | None
    speed_before: float | None = None
    """Measured speed before and after (None: too few steps on one side to measure)."""
    speed_after: float | None = None
    replan: ReplanPrediction | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"site": self.site, "step": self.step, "share": self.share, "stage": self.stage,
                               "step_before_s": self.step_before_s, "step_after_s": self.step_after_s,
                               "compute_before_s": self.compute_before_s, "compute_after_s": self.compute_after_s}
        if self.replan is not None:
            out.update(speed_before=self.speed_before, speed_after=self.speed_after, replan=self.replan.to_json())
        return out


@dataclass(frozen=True)
class RateChangeEffect:
    """A WAN link's rate changed mid-run, and AdaTopK's ratio and measured rate per step around it."""

    link: str
    step: int
    before_mbps: float | None
    after_mbps: float
    applied: bool
    """False: the run ended before the step of the change."""
    boundary: int | None
    """The pipeline boundary that crosses the link (None: the plan does not use it)."""
    ratio_per_step: tuple[float, ...]
    measured_mbps_per_step: tuple[float, ...]
    """The next stage's estimate of the link's rate, as it arrived with each backward message."""

    def to_json(self) -> dict[str, Any]:
        return {"link": self.link, "step": self.step, "before_mbps": self.before_mbps, "after_mbps": self.after_mbps,
                "applied": self.applied, "boundary": self.boundary, "ratio_per_step": list(self.ratio_per_step),
                "measured_mbps_per_step": list(self.measured_mbps_per_step)}


@dataclass(frozen=True)
class Replan:
    """A straggler found online and the pipeline re-planned at a step boundary."""

    sites_before: tuple[str, ...]
    cuts_before: tuple[int, ...]
    sites_after: tuple[str, ...]
    cuts_after: tuple[int, ...]
    at_step: int
    speed_after: float
    detected: DetectedStraggler
    site: str
    step_after_straggler_s: float | None
    step_after_replan_s: float
    predicted_after_replan_s: float | None
    replan_pause_s: float
    """Seconds between the old stages stopping and the new ones training (processes, wiring, probes)."""

    def to_json(self) -> dict[str, Any]:
        return {"sites_before": list(self.sites_before), "cuts_before": list(self.cuts_before),
                "sites_after": list(self.sites_after), "cuts_after": list(self.cuts_after), "at_step": self.at_step,
                "speed_after": self.speed_after, "detected": self.detected.to_json(), "site": self.site,
                "step_after_straggler_s": self.step_after_straggler_s, "step_after_replan_s": self.step_after_replan_s,
                "predicted_after_replan_s": self.predicted_after_replan_s, "replan_pause_s": self.replan_pause_s}


@dataclass(frozen=True)
class Targets:
    """Training seconds to the target test accuracy and test loss (None: not reached)."""

    time_to_accuracy_s: float | None
    time_to_loss_s: float | None
    target_loss: float


@dataclass(frozen=True)
class RunComparison:
    """A row against the reference run (OP-Fence + AdaTopK) and every row at equal wall time."""

    speedup_step: float | None
    speedup_tta: float | None
    speedup_ttl: float | None
    equal_wall_s: float | None = None
    """The shortest run's training time (None: no run reported one)."""
    loss_at_equal_wall: float | None = None


@dataclass(frozen=True)
class GeoRow:
    """What every run measures, pipeline or data parallel."""

    placement: str
    compression: str
    sites: tuple[str, ...]
    cuts: tuple[int, ...]
    links: tuple[dict[str, float], ...]
    """Each boundary's link cost as the planner saw it (``LinkCost`` fields)."""
    step_s: float
    """Median step time after warm-up."""
    predicted_step_s: float | None
    targets: Targets
    sends: str
    """What the slowest link carried, e.g. ``fwd top-k+int8 r=0.25 | bwd masked+int8``."""
    slow_link_bytes_per_step: float
    final_accuracy: float | None
    final_loss: float
    final_test_loss: float | None
    train_wall_s: float | None
    """Training wall-clock to the last step, evaluation excluded."""
    wan_bytes_per_step: float
    slow_link_ratio: float
    mean_ratios: tuple[float, ...]
    wall_s: float
    reduce_s: float
    samples_per_step: int
    wan_link_bytes: dict[str, int] | None
    """Bytes each WAN veth end sent during the run (Mininet; None on loopback)."""
    loss_curve: Curve
    accuracy_curve: Curve
    test_loss_curve: Curve
    comparison: RunComparison | None = None
    """Set once every run of the benchmark is done."""
    switch: str | None = None
    """The site switch implementation, in documents that combine several."""

    def with_comparison(self, comparison: RunComparison) -> GeoRow:
        return replace(self, comparison=comparison)

    def _tail_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        c = self.comparison
        if c is not None:
            out.update(speedup_step=c.speedup_step, speedup_tta=c.speedup_tta, speedup_ttl=c.speedup_ttl)
            if c.equal_wall_s is not None:
                out.update(equal_wall_s=c.equal_wall_s, loss_at_equal_wall=c.loss_at_equal_wall)
        if self.switch is not None:
            out["switch"] = self.switch
        return out

    def _curves_json(self) -> dict[str, Any]:
        return {"loss_curve": _curve(self.loss_curve), "accuracy_curve": _curve(self.accuracy_curve),
                "test_loss_curve": _curve(self.test_loss_curve)}

    def _targets_json(self) -> dict[str, Any]:
        t = self.targets
        return {"time_to_accuracy_s": t.time_to_accuracy_s, "time_to_loss_s": t.time_to_loss_s,
                "target_loss": t.target_loss}

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__}: a row is a PipelineRow or a DpRow")


@dataclass(frozen=True)
class DpRow(GeoRow):
    """Data parallel across sites: every site a full replica as its own process."""

    def to_json(self) -> dict[str, Any]:
        return {"placement": self.placement, "compression": self.compression, "sends": self.sends,
                "sites": list(self.sites), "cuts": list(self.cuts), "links": [dict(x) for x in self.links],
                "step_s": self.step_s, "predicted_step_s": self.predicted_step_s, **self._targets_json(),
                "final_accuracy": self.final_accuracy, "final_loss": self.final_loss,
                "final_test_loss": self.final_test_loss, "train_wall_s": self.train_wall_s,
                "wan_bytes_per_step": self.wan_bytes_per_step, "slow_link_bytes_per_step": self.slow_link_bytes_per_step,
                "slow_link_ratio": self.slow_link_ratio, "mean_ratios": list(self.mean_ratios), "wall_s": self.wall_s,
                "reduce_s": self.reduce_s, "wan_link_bytes": self.wan_link_bytes, "dp_sites_as": "processes",
                "samples_per_step": self.samples_per_step, **self._curves_json(), **self._tail_json()}


@dataclass(frozen=True)
class PipelineRow(GeoRow):
    """A pipeline across sites (one stage per site), with what each stage and link measured."""

    stage_compute_s: dict[str, float] = field(default_factory=dict)
    """Median compute per step of each site's stage."""
    predicted_stage_compute_s: tuple[float, ...] = ()
    straggler: StragglerEffect | None = None
    stragglers_detected: tuple[DetectedStraggler, ...] = ()
    rate_change: RateChangeEffect | None = None
    link_check: tuple[LinkCheck, ...] = ()
    slow_link_message_bytes: tuple[int, ...] | None = None
    steps_done: int = 0
    slow_link_ratio_curve: tuple[float, ...] | None = None
    """AdaTopK's ratio per forward message on the slowest link."""
    slow_link_probed_bps: float | None = None
    slow_link_measured_bps: float | None = None
    """The rate the next stage last measured for the slowest link (what the adaptive ratio follows)."""
    replanned: bool = False
    """The run was asked to re-plan (its document then has ``replan``, None without a detection)."""
    replan: Replan | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"placement": self.placement, "compression": self.compression, "sites": list(self.sites),
               "stage_compute_s": dict(self.stage_compute_s),
               "predicted_stage_compute_s": list(self.predicted_stage_compute_s),
               "straggler": self.straggler.to_json() if self.straggler is not None else None,
               "stragglers_detected": [d.to_json() for d in self.stragglers_detected],
               "rate_change": self.rate_change.to_json() if self.rate_change is not None else None,
               "cuts": list(self.cuts), "links": [dict(x) for x in self.links], "step_s": self.step_s,
               "predicted_step_s": self.predicted_step_s, **self._targets_json(), "sends": self.sends,
               "slow_link_bytes_per_step": self.slow_link_bytes_per_step,
               "link_check": [c.to_json() for c in self.link_check],
               "slow_link_message_bytes": (list(self.slow_link_message_bytes)
                                           if self.slow_link_message_bytes is not None else None),
               "final_accuracy": self.final_accuracy, "final_loss": self.final_loss,
               "final_test_loss": self.final_test_loss, "train_wall_s": self.train_wall_s,
               "wan_bytes_per_step": self.wan_bytes_per_step, "slow_link_ratio": self.slow_link_ratio,
               "steps_done": self.steps_done, "mean_ratios": list(self.mean_ratios), "wall_s": self.wall_s,
               "slow_link_ratio_curve": (list(self.slow_link_ratio_curve)
                                         if self.slow_link_ratio_curve is not None else None),
               "slow_link_probed_bps": self.slow_link_probed_bps,
               "slow_link_measured_bps": self.slow_link_measured_bps, "reduce_s": self.reduce_s,
               "samples_per_step": self.samples_per_step, "wan_link_bytes": self.wan_link_bytes,
               **self._curves_json()}
        if self.replanned:
            out["replan"] = self.replan.to_json() if self.replan is not None else None
        return {**out, **self._tail_json()}


@dataclass(frozen=True)
class BenchResult:
    """One benchmark document: settings, the plans, every run's row."""

    date: str
    machine: Machine
    settings: dict[str, Any]
    """The configuration as JSON values (topology as its text, WAN emulation named)."""
    load_average: tuple[float, ...]
    site_speeds: dict[str, float]
    probe_s: dict[str, float]
    clusters: tuple[tuple[str, ...], ...]
    plans: dict[str, str]
    """Each placement's plan as ``Plan.describe`` prints it."""
    rows: tuple[GeoRow, ...]
    partial: bool
    """Ctrl-C ended the runs early: ``rows`` are those before it."""
    switches: tuple[str, ...] | None = None
    """Switch implementations combined in this document (None: one run)."""
    switch_absent: dict[str, str] | None = None

    def row(self, placement: str, compression: str) -> GeoRow | None:
        return next((r for r in self.rows if (r.placement, r.compression) == (placement, compression)), None)

    def to_json(self) -> dict[str, Any]:
        out = {"date": self.date, "machine": self.machine.to_json(), "settings": self.settings,
               "load_average": list(self.load_average), "site_speeds": dict(self.site_speeds),
               "probe_s": dict(self.probe_s), "clusters": [list(c) for c in self.clusters], "plans": dict(self.plans),
               "rows": [r.to_json() for r in self.rows], "partial": self.partial}
        if self.switches is not None:
            out.update(switches=list(self.switches), switch_absent=dict(self.switch_absent or {}))
        return out


__all__ = ["BenchResult", "RunComparison", "Curve", "DetectedStraggler", "DpRow", "LinkCheck", "PipelineRow", "RateChangeEffect",
           "Replan", "ReplanPrediction", "GeoRow", "StragglerEffect", "Targets"]
