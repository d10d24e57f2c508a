"""Step and evaluation lines of the stage processes as typed points, read once at the JSON edge,
and what ``measures`` derives from them (targets, curves in the saved document's form)."""

from __future__ import annotations

from dataclasses import replace

from innet.testbed.geo.config import GeoBenchConfig
from innet.testbed.geo.measures import curves, targets
from innet.testbed.geo.records import EvalPoint, TrainPoint

STEPS = [{"event": "step", "step": 0, "t": 0.5, "loss": 3.25, "s": 0.01},
         {"event": "step", "step": 1, "t": 1.0, "loss": 2.5, "s": 0.01}]
EVALS = [{"event": "eval", "step": 0, "t": 0.6, "accuracy": 0.25, "loss": 2.75},
         {"event": "eval", "step": 1, "t": 1.1, "accuracy": 0.75, "loss": 0.875}]


def test_points_keep_the_values_of_the_lines() -> None:
    assert [TrainPoint.from_json(r) for r in STEPS] == [TrainPoint(0.5, 3.25), TrainPoint(1.0, 2.5)]
    e = EvalPoint.from_json(EVALS[1])
    assert e == EvalPoint(1.1, 1, 0.75, 0.875) and isinstance(e.step, int)


def test_curves_and_targets_from_points() -> None:
    steps = [TrainPoint.from_json(r) for r in STEPS]
    evals = [EvalPoint.from_json(r) for r in EVALS]
    loss, accuracy, test_loss = curves(steps, evals)
    assert loss == ((0.5, 3.25), (1.0, 2.5))
    assert accuracy == ((0.6, 0, 0.25), (1.1, 1, 0.75))
    assert test_loss == ((0.6, 0, 2.75), (1.1, 1, 0.875))
    config = replace(GeoBenchConfig(), target_accuracy=0.5, target_loss=1.0)
    reached = targets(config, evals)
    assert (reached.time_to_accuracy_s, reached.time_to_loss_s) == (1.1, 1.1)
    assert targets(replace(config, target_accuracy=0.9, target_loss=0.5), evals).time_to_accuracy_s is None
