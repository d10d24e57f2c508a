"""Data parallel across sites as one process per site over TCP (the form the Mininet bench
runs) trains exactly like the thread form: same losses and accuracy, dense and top-k."""

from __future__ import annotations

import numpy as np
import pytest

from innet.host.geo.data import Digits, accuracy
from innet.host.geo.dataparallel import evaluator, train
from innet.host.geo.dp_process import DpJob, launch_dp
from innet.host.geo.graph import mlp
from innet.host.geo.launch import LaunchError
from innet.host.geo.specs import DigitsSpec, MlpSpec
from innet.host.geo.stages import Sgd

SIZES = [64, 32, 10]
SITES, STEPS, BATCH, MB, LR = 3, 4, 16, 2, 0.1


def _jobs(ratio: float, **extra: object) -> list[DpJob]:
    return [DpJob(model=MlpSpec(tuple(SIZES)), task=DigitsSpec(), index=i, sites=SITES, steps=STEPS,
                  batch=BATCH, microbatches=MB, data_seed=1000 * i, lr=LR, momentum=0.9, ratio=ratio,
                  eval_every=2, timeout=30.0, **extra)  # type: ignore[arg-type]
            for i in range(SITES)]


@pytest.mark.parametrize("ratio", [1.0, 0.1])
def test_dp_processes_train_like_dp_threads(ratio: float) -> None:
    out = launch_dp(_jobs(ratio), timeout=120.0)
    graph = mlp(SIZES)
    task = Digits.load(0)
    log = train(graph, graph.init_params(0), SITES, [task.batches(BATCH, MB, 1000 * i) for i in range(SITES)],
                STEPS, Sgd(LR, 0.9), lambda i, j: None, ratio=ratio,
                evaluate=evaluator(graph, task.test_feeds(), task.test_labels, accuracy), eval_every=2)
    losses = [r["loss"] for r in out[0].of("step")]
    np.testing.assert_allclose(losses, [loss for _, loss in log.steps], rtol=1e-6)
    assert [r["accuracy"] for r in out[0].of("eval")] == pytest.approx([a for _, _, a in log.evals])
    sent = [o.of("done")[0]["sent"] for o in out]
    assert all(s > 0 for s in sent)
    if ratio < 1:  # top-k: value + index of 10% of the gradient, to each of 2 peers
        dense = sum((a * b + b) * 4 for a, b in zip(SIZES, SIZES[1:])) * 2 * STEPS
        assert sent[0] < 0.3 * dense


def test_a_dp_site_that_fails_is_named() -> None:
    jobs = _jobs(1.0)
    jobs[2] = DpJob(**{**jobs[2].__dict__, "model": {"kind": "nope"}})  # the JSON of a model no site builds
    with pytest.raises(LaunchError, match="dp site 2 exited with status 2 before listening: .*model kind 'nope'"):
        launch_dp(jobs, timeout=60.0)


def test_dp_processes_send_int8_gradients_and_report_test_loss() -> None:
    """``codec="int8"``: each gradient goes as int8 in rows of 256 with a scale each (error
    feedback keeps the rounding), about a quarter of the dense bytes; every evaluation reports
    test accuracy and test loss."""
    dense = launch_dp(_jobs(1.0), timeout=120.0)
    int8 = launch_dp(_jobs(1.0, codec="int8"), timeout=120.0)
    sent_dense = dense[0].of("done")[0]["sent"]
    sent_int8 = int8[0].of("done")[0]["sent"]
    assert 0.24 * sent_dense < sent_int8 < 0.30 * sent_dense
    evals = int8[0].of("eval")
    assert evals and all(0 < e["loss"] < 5 and 0 <= e["accuracy"] <= 1 for e in evals)
    d_losses = [r["loss"] for r in dense[0].of("step")]
    q_losses = [r["loss"] for r in int8[0].of("step")]
    np.testing.assert_allclose(q_losses, d_losses, rtol=0.05)  # int8 with feedback trains like dense
    with pytest.raises(LaunchError, match="gradient codec 'fp4'"):
        launch_dp(_jobs(1.0, codec="fp4"), timeout=60.0)
