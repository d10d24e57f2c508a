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


def test_a_stage_done_line_reads_into_a_record() -> None:
    from innet.testbed.geo.records import StageDone

    line = {"event": "done", "stage": 1, "compute_s": 0.1, "microbatches": 8, "reduce_s": 0.002,
            "bandwidth_next_bps": 9.5e6, "delay_next_s": 0.0304, "mean_ratio_next": 0.28, "mean_ratio_prev": None,
            "ratios_next": [1.0, 0.2812], "measured_rate_next_bps": 9.9e6, "rates_next_bps": [9000000, 9900000],
            "codecs_next": {"int8": 1, "top-k+int8": 1}, "codecs_prev": {"int8": 2}, "bytes_next": 60000,
            "bytes_prev": 50000, "sizes_next": [40000, 20000], "sent_next": 60100, "sent_prev": 50100}
    d = StageDone.from_json(line)
    assert (d.stage, d.sent_next + d.sent_prev, d.bytes_next, d.sizes_next) == (1, 110200, 60000, (40000, 20000))
    assert d.ratios_next == (1.0, 0.2812) and d.rates_next_bps == (9000000, 9900000)
    assert d.codecs_next == {"int8": 1, "top-k+int8": 1} and d.bandwidth_next_bps == 9.5e6
    last = StageDone.from_json({**line, "bandwidth_next_bps": None, "delay_next_s": None, "mean_ratio_next": None})
    assert last.bandwidth_next_bps is None and last.mean_ratio_next is None
