"""Online straggler detection from the stages' per-step compute times.

A stage whose device slows (a tighter CPU quota, a co-tenant) computes each step more slowly;
the coordinator sees every stage's compute per step as the run goes (the ``compute`` records of
``stage_process``). A stage is a straggler when the median of its last ``window`` steps exceeds
``threshold`` times its baseline, the median of its first ``window`` steps after ``warmup``,
and ``threshold`` times the median of every stage's such factor (with three stages or more):
sustained, so one slow step (a scheduler hiccup, an evaluation) is not enough; relative to the
stage itself, so stages with more operators are not stragglers for being bigger; and relative
to the others, so a machine that gets busier, slowing every stage alike, is not a straggler
(measured on a shared 2-core machine: without it, stages that were not slowed were reported).
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
    compared: int = 0
    """Steps every stage had reported at the last comparison."""

    def observe(self, stage: int, step: int, compute_s: float) -> Detection | None:
        """Record one step of one stage; a detection if this record completes one, else None.
        Stages are compared over the steps every stage has reported: a pipeline's first stages
        run a step or more ahead of its last, so their counts are rarely equal at any one record."""
        c = self.config
        if step < c.warmup:
            return None
        self.seen.setdefault(stage, []).append(compute_s)
        n = min(len(v) for v in self.seen.values())
        if n <= self.compared or n < 2 * c.window:  # nothing new in common, or too few steps yet
            return None
        self.compared = n
        common = {s: v[:n] for s, v in self.seen.items()}
        factors = {s: self._factor(v) for s, v in common.items()}
        # relative to the stages' median: a machine that gets busier slows every stage alike
        typical = max(statistics.median(factors.values()), 1.0) if len(factors) >= 3 else 1.0
        found = None
        for s, f in sorted(factors.items(), key=lambda kv: -kv[1]):
            if f > c.threshold * typical and not any(d.stage == s for d in self.detections):
                v = common[s]
                hit = Detection(s, c.warmup + n - 1, statistics.median(v[:c.window]), statistics.median(v[-c.window:]))
                self.detections.append(hit)
                found = found or hit
        return found

    def _factor(self, values: list[float]) -> float:
        w = self.config.window
        baseline = statistics.median(values[:w])
        return statistics.median(values[-w:]) / baseline if baseline > 0 else float("inf")
