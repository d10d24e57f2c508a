"""Online straggler detection from the stages' per-step compute times.

A stage whose device slows (a tighter CPU quota, a co-tenant) computes each step more slowly;
the coordinator sees every stage's compute per step as the run goes (the ``compute`` records of
``stage_process``). A stage is a straggler when the median of its last ``window`` steps exceeds
``threshold`` times its baseline, the median of its first ``window`` steps after ``warmup``:
sustained, so one slow step (a scheduler hiccup, an evaluation) is not enough, and relative to
the stage itself, so stages with more operators are not stragglers for being bigger.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


class StragglerError(ValueError):
    """Bad detector settings; names the setting and value."""


@dataclass(frozen=True)
class StragglerConfig:
    """When a stage counts as slowed down."""

    threshold: float = 1.5
    """Factor over the stage's baseline compute that its recent median must exceed."""
    window: int = 5
    """Steps in the baseline and in the recent median."""
    warmup: int = 3
    """First steps ignored (start-up effects)."""

    def __post_init__(self) -> None:
        if not self.threshold > 1.0:
            raise StragglerError(f"straggler threshold {self.threshold!r}: must be above 1")
        if self.window < 1 or self.warmup < 0:
            raise StragglerError(f"straggler window {self.window!r} / warmup {self.warmup!r}: need window >= 1, "
                                 "warmup >= 0")


@dataclass(frozen=True)
class Detection:
    stage: int
    step: int
    """The step whose compute record completed the sustained slowdown."""
    baseline_s: float
    recent_s: float

    @property
    def factor(self) -> float:
        return self.recent_s / self.baseline_s if self.baseline_s > 0 else float("inf")


@dataclass
class StragglerDetector:
    """Feed it every stage's compute per step; it reports each stage's first sustained slowdown."""

    config: StragglerConfig = field(default_factory=StragglerConfig)
    seen: dict[int, list[float]] = field(default_factory=dict)
    detections: list[Detection] = field(default_factory=list)

    def observe(self, stage: int, step: int, compute_s: float) -> Detection | None:
        """Record one step of one stage; the detection if this step completes one, else None."""
        c = self.config
        if step < c.warmup or any(d.stage == stage for d in self.detections):
            return None
        values = self.seen.setdefault(stage, [])
        values.append(compute_s)
        if len(values) < 2 * c.window:
            return None
        baseline = statistics.median(values[:c.window])
        recent = statistics.median(values[-c.window:])
        if recent > c.threshold * baseline:
            found = Detection(stage, step, baseline, recent)
            self.detections.append(found)
            return found
        return None
