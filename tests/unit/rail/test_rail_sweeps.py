"""Figures 8-10 of the Rail-only paper recomputed: each number the paper's text quotes, next to
the model's, within the tolerance docs/rail.md states for that figure."""

from __future__ import annotations

import pytest

from innet.testbed.rail.models import sweeps


def _slowdown(model: str, gpus: int, k: int) -> float:
    ideal = sweeps.point(model, gpus, gpus, sweeps.DEFAULT_BATCH).seconds
    return sweeps.point(model, gpus, k, sweeps.DEFAULT_BATCH).seconds / ideal - 1


@pytest.mark.parametrize(("model", "gpus", "tolerance"), [
    ("gpt-1t", 16384, 0.015), ("gpt-1t", 32768, 0.015), ("gpt-146b", 16384, 0.03), ("gpt-146b", 32768, 0.03),
])
def test_fig8_hb_domain_of_256_is_close_to_ideal(model: str, gpus: int, tolerance: float) -> None:
    """Paper: K = 256 is 0.9% (GPT-1T) and 4.1% (GPT-146B) slower than one fabric over all GPUs.
    Docs: within 1.5 points (1T) and 3 points (146B) on 16k and 32k GPUs; the slowdown falls as K
    grows, and the smaller model gains more from a bigger domain."""
    k256 = _slowdown(model, gpus, 256)
    assert k256 == pytest.approx(sweeps.PAPER_FIG8[(model, 256)], abs=tolerance)
    k8, k32 = _slowdown(model, gpus, 8), _slowdown(model, gpus, 32)
    assert k8 > k32 > k256 >= 0


def test_fig8_smaller_model_needs_the_bigger_domain() -> None:
    assert _slowdown("gpt-146b", 32768, 8) > 2 * _slowdown("gpt-1t", 32768, 8)


def _gain(k: int, kind: str) -> float:
    if kind == "hb":
        lo, hi = (sweeps.point("gpt-1t", sweeps.FIG9_GPUS, k, sweeps.DEFAULT_BATCH, c_f_bps=bw).seconds
                  for bw in (2.4e12, 9.6e12))
    else:
        lo, hi = (sweeps.point("gpt-1t", sweeps.FIG9_GPUS, k, sweeps.DEFAULT_BATCH, c_s_bps=bw).seconds
                  for bw in (100e9, 400e9))
    return 1 - hi / lo


def test_fig9_bandwidth_sensitivity() -> None:
    """Paper: 4x HB bandwidth gains 8.0% (K=8) and 13.3% (K=256); 4x NIC bandwidth 35.9% and 8.0%.
    Docs: the ordering holds exactly (K=8 wants NIC bandwidth, K=256 HB bandwidth), each number
    within 12 points."""
    gains = {(k, kind): _gain(k, kind) for k in (8, 256) for kind in ("hb", "nic")}
    assert gains[(8, "nic")] > gains[(8, "hb")]
    assert gains[(256, "hb")] > gains[(256, "nic")]
    assert gains[(8, "nic")] > gains[(256, "nic")] and gains[(256, "hb")] > gains[(8, "hb")]
    for key, paper in sweeps.PAPER_FIG9.items():
        assert gains[key] == pytest.approx(paper, abs=0.12), key


def test_fig10_batch_size() -> None:
    """Paper: GPT-1T on 32,768 GPUs is 65% -> 85% of the ideal at K = 8 and 95% -> 99% at K = 256
    as the batch grows from 256 to 4096. Docs: within 6.5 points, and rising with the batch."""
    rows = sweeps.batch_sweep(batches=(256, 4096), hb_sizes=(8, 256))
    rel = {(r.hb_size, r.batch): r.relative for r in rows}
    for key, paper in sweeps.PAPER_FIG10.items():
        assert rel[key] == pytest.approx(paper, abs=0.065), key
    assert rel[(8, 4096)] > rel[(8, 256)] and rel[(256, 4096)] > rel[(256, 256)]
    assert rel[(256, 256)] > rel[(8, 256)]
