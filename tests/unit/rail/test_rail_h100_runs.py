"""The H100 out-of-sample validation is computed from the published configurations."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace

import pytest

from innet.testbed.rail.models import h100_runs, iteration
from innet.testbed.rail.models.railperf import ModelError

RUNS = h100_runs.MEGATRON_CORE_WEAK_SCALING
EFF, HB = 0.7, 0.8


def test_transcribed_rows_agree_with_the_sources_own_derived_columns() -> None:
    # The README table's "Number of GPUs" and "MFU" columns are derived from other columns
    # (TP x PP x DP, teraFLOP/s / 989); they check the transcription of the rest.
    assert [r.gpus for r in RUNS] == [48, 96, 192, 384, 768, 1536, 2304, 3072, 6144]
    assert [round(100 * r.published_mfu()) for r in RUNS] == [41, 47, 49, 46, 42, 43, 44, 48, 47]


def test_published_step_time_is_model_flops_over_the_published_rate() -> None:
    run = RUNS[-1]
    b, s, l, h, v = run.batch, 4096, run.layers, run.hidden, 131072
    flops = 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h))
    assert run.published_seconds() == pytest.approx(flops / (run.gpus * run.tflops_per_gpu * 1e12))


def test_each_row_is_the_iteration_model_on_that_rows_configuration() -> None:
    runs = (RUNS[0], replace(RUNS[4], batch=768))  # a changed configuration changes the row
    rows = h100_runs.validation_rows(EFF, HB, runs)
    for run, row in zip(runs, rows):
        platform = replace(iteration.h100_cluster(run.gpus, network="rail-optimized"), efficiency=EFF,
                           hb_efficiency=HB, tp_overlap=1.0)
        expected = iteration.iteration(run.model(), platform, run.parallelism(), run.batch)
        assert row.model_s == pytest.approx(expected.total)
        assert row.error == pytest.approx(expected.mfu / run.published_mfu() - 1)
        assert row.published_s == pytest.approx(run.published_seconds())
        unfused = iteration.iteration(run.model(), platform, replace(run.parallelism(), attention="unfused"),
                                      run.batch)
        assert row.error_unfused == pytest.approx(unfused.mfu / run.published_mfu() - 1)
        assert run.parallelism().attention == h100_runs.ATTENTION == "fused"
    assert rows[1].model_s != pytest.approx(h100_runs.validation_rows(EFF, HB, (RUNS[4],))[0].model_s)


def test_summary_median_and_guess_effects_are_recomputed() -> None:
    doc = h100_runs.summary(EFF, HB)
    assert len(doc.rows) == len(RUNS)
    assert doc.median_abs_error == pytest.approx(statistics.median(abs(r.error) for r in doc.rows))
    none = h100_runs.validation_rows(EFF, HB, guesses=replace(h100_runs.GUESSES, recompute="none"))
    assert doc.effect("recompute=none") == pytest.approx(statistics.median(abs(r.error) for r in none))
    assert "recompute" in dict(doc.guesses)
    fp32 = h100_runs.validation_rows(EFF, HB, platform_options=(("grad_bytes", 4),))
    assert doc.effect("grad_bytes=4") == pytest.approx(statistics.median(abs(r.error) for r in fp32))
    assert all(a.model_s >= b.model_s for a, b in zip(fp32, doc.rows))
    with pytest.raises(KeyError, match="recompute=never"):
        doc.effect("recompute=never")
    # interleaving applies only where Megatron allows it (PP > 1, whole chunks per stage)
    two = replace(h100_runs.GUESSES, interleave=2)
    assert [r.parallelism(two).interleave for r in RUNS] == [1, 1, 1, 1, 2, 1, 2, 2, 1]


def test_summary_json_keeps_the_saved_documents_keys() -> None:
    doc = h100_runs.summary(EFF, HB)
    saved = json.loads(json.dumps(doc.to_json()))
    assert set(saved) == {"source", "attention", "guesses", "rows", "median_abs_error", "median_abs_error_unfused",
                          "guess_effect"}
    assert saved["guesses"] == {"microbatch": 1, "interleave": 1, "recompute": "selective"}
    assert saved["guess_effect"]["recompute=none"] == pytest.approx(doc.effect("recompute=none"))
    assert saved["rows"][0] == {"model": "GPT-1.7B", "gpus": doc.rows[0].gpus, "published_s": doc.rows[0].published_s,
                                "model_s": doc.rows[0].model_s, "published_mfu": doc.rows[0].published_mfu,
                                "model_mfu": doc.rows[0].model_mfu, "error": doc.rows[0].error,
                                "error_unfused": doc.rows[0].error_unfused, "config": doc.rows[0].config}


def test_a_bad_published_rate_is_one_clear_error() -> None:
    with pytest.raises(ModelError, match="tflops_per_gpu"):
        replace(RUNS[0], tflops_per_gpu=0.0).published_seconds()
