"""Attention kernels as an input of the iteration model: unfused (the default) and fused
(FlashAttention-style), computed from Dao et al.'s IO count, not fitted."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from innet.testbed.rail.models import gpt, h100_runs, iteration
from innet.testbed.rail.models.iteration import Parallelism
from innet.testbed.rail.models.railperf import ModelError

MODEL = gpt.GptModel("t", hidden=2048, layers=4, heads=16, seq=4096, vocab=1000)


def test_fused_attention_keeps_the_flops_and_drops_the_score_traffic() -> None:
    unfused = gpt.layer_work(MODEL, microbatch=2, tp=2)
    fused = gpt.layer_work(MODEL, 2, 2, attention="fused", sram_bytes=iteration.H100.sram_bytes)
    assert (fused.matmul_flops, fused.core_flops, fused.vector_bytes) == (
        unfused.matmul_flops, unfused.core_flops, unfused.vector_bytes)
    # Dao et al. Algorithm 1 with M = 256 KB / 2 bytes, d = 128: B_c = 256 key rows, 16 blocks.
    per_head = 2 * (2 + 3 * 16) * 4096 * 128
    assert fused.core_bytes == pytest.approx(2 * 8 * per_head)
    assert unfused.core_bytes == pytest.approx(2 * 8 * 13 * 4096 ** 2)  # softmax, dropout, QK^T/xV
    assert fused.core_bytes < unfused.core_bytes


def test_fused_attention_traffic_grows_as_n_squared_d_squared_over_m() -> None:
    """Theorem 2 of Dao et al.: Theta(N^2 d^2 / M); doubling N
    quadruples the block term (N^2), halving M doubles it."""
    base = gpt.fused_attention_bytes(8192, 128, 128 * 1024)
    assert gpt.fused_attention_bytes(16384, 128, 128 * 1024) == pytest.approx(2 * (base - 4 * 8192 * 128) * 2
                                                                                + 4 * 16384 * 128)
    assert gpt.fused_attention_bytes(8192, 128, 64 * 1024) == pytest.approx(2 * (base - 4 * 8192 * 128)
                                                                            + 4 * 8192 * 128)
    assert base == 2 * (2 + 3 * math.ceil(8192 / 128)) * 8192 * 128  # B_c = 64K values / 4d = 128


def test_fused_attention_lowers_the_memory_bound_time_and_not_the_model_flops() -> None:
    platform = iteration.h100_cluster(8)
    par = Parallelism(2, 2, 2, microbatch=1)
    unfused = iteration.iteration(MODEL, platform, par, batch=8)
    fused = iteration.iteration(MODEL, platform, replace(par, attention="fused"), batch=8)
    assert fused.compute < unfused.compute
    assert fused.mfu > unfused.mfu
    # model FLOPs are what the MFU counts: the same work, done in less time
    assert fused.mfu * fused.total == pytest.approx(unfused.mfu * unfused.total)
    # the backward's QK^T recomputation (2.5 forward cores, Dao et al. Algorithm 4) is charged
    no_extra = replace(par, attention="fused")
    w = gpt.layer_work(MODEL, 1, 2, True, "fused", platform.gpu.sram_bytes)
    flops_s = platform.gpu.peak_flops * platform.efficiency
    fwd = (w.matmul_flops + w.core_flops) / flops_s + (w.vector_bytes + w.core_bytes) / (
        platform.gpu.hbm_bytes_s * platform.efficiency)
    layer = 3 * fwd + w.core_flops / flops_s + w.core_bytes / (platform.gpu.hbm_bytes_s * platform.efficiency) \
        + 0.5 * w.core_flops / flops_s
    m = 8 // (2 * 1)
    assert iteration.iteration(MODEL, platform, no_extra, 8).compute == pytest.approx(
        m * (MODEL.layers / 2 * layer + 6 * MODEL.seq * MODEL.hidden * MODEL.vocab / 2 / flops_s / 2))


def test_unfused_is_the_default_and_leaves_the_model_unchanged() -> None:
    assert Parallelism(1, 1, 1).attention == "unfused"
    explicit = gpt.layer_work(MODEL, 1, 1, attention="unfused", sram_bytes=iteration.H100.sram_bytes)
    assert explicit == gpt.layer_work(MODEL, 1, 1)
    # the A100 validation and the H100 runs' unfused column are the model without the input
    rows = h100_runs.validation_rows(0.7, 0.8, h100_runs.MEGATRON_CORE_WEAK_SCALING[:2])
    for run, row in zip(h100_runs.MEGATRON_CORE_WEAK_SCALING[:2], rows):
        platform = replace(iteration.h100_cluster(run.gpus, network="rail-optimized"), efficiency=0.7,
                           hb_efficiency=0.8, tp_overlap=1.0)
        par = Parallelism(run.tp, run.pp, run.dp, recompute="selective")
        old = iteration.iteration(run.model(), platform, par, run.batch)
        assert row.error_unfused == pytest.approx(old.mfu / run.published_mfu() - 1)
        assert row.error > row.error_unfused


def test_bad_attention_values_are_one_clear_error() -> None:
    with pytest.raises(ModelError, match="attention='flash'"):
        Parallelism(1, 1, 1, attention="flash")
    with pytest.raises(ModelError, match="attention='x'"):
        gpt.layer_work(MODEL, 1, 1, attention="x")
    with pytest.raises(ModelError, match="sram_bytes"):
        gpt.layer_work(MODEL, 1, 1, attention="fused")
