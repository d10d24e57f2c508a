"""The GPT iteration-time model: FLOP counts, collectives, and the validation against the
published Megatron runs (docs/rail.md states the tolerances pinned here)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from innet.testbed.rail.models import gpt, iteration
from innet.testbed.rail.models.iteration import GroupShape, Parallelism, Platform
from innet.testbed.rail.models.railperf import ModelError


def test_parameter_counts_match_the_names() -> None:
    expected = {"gpt-22b": 22e9, "gpt-175b": 175e9, "gpt-530b": 530e9, "gpt-1t": 1e12, "gpt-146b": 146e9}
    for name, params in expected.items():
        assert gpt.MODELS[name].params == pytest.approx(params, rel=0.03), name


def test_korthikanti_flop_formulas() -> None:
    """Appendix A of Korthikanti et al.: 72 B s l h^2 (1 + s/6h + V/12lh) model FLOPs; selective
    recomputation adds the attention core (s/3h); full recomputation is 96 (1 + s/6h + V/16lh)."""
    m = gpt.GptModel("t", hidden=1024, layers=2, heads=8, seq=512, vocab=1000)
    base = 72 * 3 * 512 * 2 * 1024 ** 2
    assert m.model_flops(3) == pytest.approx(base * (1 + 512 / 6144 + 1000 / (12 * 2 * 1024)))
    assert m.hardware_flops(3, "selective") == pytest.approx(base * (1 + 512 / 3072 + 1000 / (12 * 2 * 1024)))
    assert m.hardware_flops(3, "full") == pytest.approx(
        96 * 3 * 512 * 2 * 1024 ** 2 * (1 + 512 / 6144 + 1000 / (16 * 2 * 1024)))
    # the per-layer work adds up to the model FLOPs (forward x 3, logits aside)
    w = gpt.layer_work(m, microbatch=3, tp=1)
    assert 3 * m.layers * (w.matmul_flops + w.core_flops) == pytest.approx(base * (1 + 512 / 6144))


def test_published_hfu_is_derived_from_the_published_times() -> None:
    """The runs' HFU (hardware FLOPs / (GPUs x 312 TFLOP/s x time)): 43.8, 52.8, 57.0, 57.0%."""
    assert [round(100 * r.hfu(), 1) for r in iteration.VALIDATION] == [43.8, 52.8, 57.0, 57.0]


def test_fitted_efficiency_is_the_least_squares_fit() -> None:
    """FITTED_EFFICIENCY is what calibrate() finds, not a hand-picked number."""
    assert iteration.calibrate() == pytest.approx(iteration.FITTED_EFFICIENCY, abs=0.001)


def test_validation_within_the_papers_errors() -> None:
    """The paper's model is within 1.8% (GPT-1T) and 10.8% (GPT-22B) of the published HFU; ours
    must be within 2% and 11% (docs/rail.md), in-sample and with the efficiency fitted on the
    other three runs (leave-one-out); every run within 8%."""
    rows = {r.model: r for r in iteration.validation_rows()}
    assert abs(rows["gpt-1t"].error) <= 0.02
    assert abs(rows["gpt-22b"].error) <= 0.11
    for i, run in enumerate(iteration.VALIDATION):
        others = [r for j, r in enumerate(iteration.VALIDATION) if j != i]
        loo = iteration.validation_rows(iteration.calibrate(others))[i].error
        assert abs(rows[run.model].error) <= 0.08, run.model
        assert abs(loo) <= {"gpt-1t": 0.02, "gpt-22b": 0.11}.get(run.model, 0.08), (run.model, loo)


@pytest.mark.parametrize(("size", "stride", "k", "shape"), [
    (8, 1, 8, GroupShape(8, 1, True)),      # TP inside a DGX
    (6, 8, 8, GroupShape(1, 6, True)),      # DP across DGXs: one rail
    (64, 8, 256, GroupShape(32, 2, True)),  # the paper's GH200 example: 32 per domain, 2 domains
    (4, 3, 8, GroupShape(3, 2, False)),     # 0,3 | 6,9 : not a grid, different rails
    (16, 1, 8, GroupShape(8, 2, True)),     # TP wider than the domain
])
def test_group_shapes(size: int, stride: int, k: int, shape: GroupShape) -> None:
    assert iteration.strided_shape(size, stride, k) == shape
    assert iteration.group_shape(np.arange(size) * stride, k).x == shape.x


def test_hierarchical_gather_time() -> None:
    """T = (x-1)/x M/C_F + (y-1)/(xy) M/C_S (efficiencies 1); rail-only pays M/C_F more on the
    rail phase of a group that is not on one rail, rail-optimized does not."""
    p = Platform(iteration.H100, 64, 8, 8e9, 1e9, hb_efficiency=1.0, nic_efficiency=1.0)  # 1 GB/s HB, 0.125 NIC
    m = 8e9
    assert iteration.gather_time(GroupShape(4, 2, True), m, p) == pytest.approx(3 / 4 * 8 + 1 / 8 * 8 / 0.125)
    off = GroupShape(4, 2, False)
    assert iteration.gather_time(off, m, p) == pytest.approx(6 + 8 + 1)
    assert iteration.gather_time(off, m, replace(p, network="rail-optimized")) == pytest.approx(6 + 8)
    assert iteration.p2p_time(0, 9, 1e9, p) == pytest.approx(1 / 0.125 + 1)   # other domain, other rail
    assert iteration.p2p_time(0, 8, 1e9, p) == pytest.approx(1 / 0.125)       # same rail
    assert iteration.p2p_time(0, 3, 1e9, p) == pytest.approx(1.0)             # same domain


def test_gh200_two_tiers_slow_only_groups_with_one_member_per_board() -> None:
    """DGX GH200: boards of 8 joined at half the NVLink rate (57.6 TB/s all-to-all over 256
    GPUs). TP inside a board and TP 16 over two boards keep the flat rate; DP with one member
    per board runs its HB phase at half; a flat domain never slows."""
    assert iteration.GH200_CROSS_TIER == pytest.approx(0.5)
    flat = iteration.h100_cluster(512, 256)
    gh200 = replace(flat, hb_tier_size=iteration.GH200_TIER_SIZE, hb_cross_tier=iteration.GH200_CROSS_TIER)
    tp8, tp16 = iteration.strided_shape(8, 1, 256), iteration.strided_shape(16, 1, 256)
    dp = iteration.strided_shape(64, 8, 256)  # 32 per domain, one per board
    assert iteration.tier_slowdown(tp8, 1, gh200) == 1.0
    assert iteration.tier_slowdown(tp16, 1, gh200) == 1.0
    assert iteration.tier_slowdown(dp, 8, gh200) == pytest.approx(2.0)
    assert iteration.tier_slowdown(dp, 8, flat) == 1.0
    m = 1e9
    hb_phase = (32 - 1) / 32 * m / gh200.hb_bytes_s
    assert (iteration.gather_time(dp, m, gh200, 2.0) - iteration.gather_time(dp, m, flat)) == pytest.approx(hb_phase)
    model, par = gpt.MODELS["gpt-1t"], Parallelism(8, 1, 64, 1)
    slow, fast = (iteration.iteration(model, replace(p, gpus=512), par, 64 * 8) for p in (gh200, flat))
    assert slow.data > fast.data and slow.tensor == pytest.approx(fast.tensor)


def test_blocking_pipeline_sends_are_exposed_for_every_micro_batch() -> None:
    """Overlapped: the fill and drain's 2(pv-1) sends; blocking (Megatron-LM 2021): 2(mv+p-1)."""
    model, par = gpt.MODELS["gpt-1t"], Parallelism(8, 32, 128, 1, 4)
    overlapped = iteration.iteration(model, iteration.h100_cluster(32768, 8), par, 4096)
    blocking = iteration.iteration(model, replace(iteration.h100_cluster(32768, 8), pp_overlap=False), par, 4096)
    m = 4096 // 128
    assert blocking.pipeline / overlapped.pipeline == pytest.approx((m * 4 + 32 - 1) / (32 * 4 - 1))
    assert blocking.compute == overlapped.compute and blocking.data == overlapped.data


def test_async_backward_tp_hides_only_what_fits_beside_the_column_gemms() -> None:
    """4 of the 10 TP passes per layer may run beside the QKV and first-MLP GEMMs of the
    backward pass: with fast NVLink they vanish (6/10 of the time stays); with slow NVLink
    only the column GEMMs' time is hidden."""
    model, par = gpt.MODELS["gpt-1t"], Parallelism(8, 32, 128, 1, 4)
    base = iteration.h100_cluster(32768, 8)
    fast = iteration.iteration(model, base, par, 4096)
    fast_async = iteration.iteration(model, replace(base, tp_async_backward=True), par, 4096)
    assert fast_async.tensor == pytest.approx(fast.tensor * 6 / 10)
    slow = replace(base, c_f_bps=1e9)
    exposed = iteration.iteration(model, slow, par, 4096)
    hidden = iteration.iteration(model, replace(slow, tp_async_backward=True), par, 4096)
    w = gpt.layer_work(model, 1, 8)
    column = 2 * iteration.COLUMN_GEMM_SHARE * w.matmul_flops / (iteration.H100.peak_flops * base.efficiency)
    steps = 4096 / 128 + 31 / 4
    assert exposed.tensor - hidden.tensor == pytest.approx(steps * 128 / 32 * column)


def test_logits_on_the_last_stage_pace_the_steady_state() -> None:
    model = gpt.MODELS["gpt-1t"]
    base = iteration.h100_cluster(32768, 8)
    spread, last = (iteration.iteration(model, replace(base, last_stage_logits=flag), Parallelism(8, 32, 128, 1, 4),
                                        4096) for flag in (False, True))
    assert last.compute > spread.compute and last.bubble == pytest.approx(spread.bubble)
    one_stage = Parallelism(8, 1, 4096, 1)
    assert iteration.iteration(model, replace(base, last_stage_logits=True), one_stage, 4096).compute == \
        pytest.approx(iteration.iteration(model, base, one_stage, 4096).compute)


def test_iteration_terms_add_up_and_respond_to_bandwidth() -> None:
    model = gpt.MODELS["gpt-1t"]
    par = Parallelism(8, 32, 128, 1, 4)
    r = iteration.iteration(model, iteration.h100_cluster(32768, 8), par, 4096)
    assert r.total == pytest.approx(r.compute + r.bubble + r.tensor + r.pipeline + r.data + r.optimizer)
    assert r.bubble == pytest.approx(r.compute * (32 - 1) / 4 / (4096 / 128))
    assert 0 < r.hfu < 1 and r.mfu < r.hfu
    slow_nic = iteration.iteration(model, iteration.h100_cluster(32768, 8, c_s_bps=100e9), par, 4096)
    assert slow_nic.data > r.data and slow_nic.tensor == pytest.approx(r.tensor)
    ideal = iteration.iteration(model, iteration.h100_cluster(32768, 32768), par, 4096)
    assert ideal.total < r.total and ideal.data < r.data and ideal.pipeline < r.pipeline


def test_best_split_fits_memory_and_beats_a_fixed_one() -> None:
    model = gpt.MODELS["gpt-1t"]
    platform = iteration.h100_cluster(4096, 8)
    par, r = iteration.best(model, platform, 1024)
    assert r.memory_bytes <= platform.gpu.memory_bytes
    assert r.total <= iteration.iteration(model, platform, Parallelism(8, 64, 8, 1, 1), 1024).total
    with pytest.raises(ModelError, match=r"gpt-1t with batch=1 fits no split of 8 h100 GPUs"):
        iteration.best(model, iteration.h100_cluster(8, 8), 1)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"hb_size": 7}, r"hb_size=7: must divide gpus=64"),
    ({"c_f_bps": 0.0}, r"c_f \(HB bandwidth\)=0.0: must be a number > 0"),
    ({"c_s_bps": -1.0}, r"c_s \(NIC bandwidth\)=-1.0: must be a number > 0"),
    ({"gpus": 0}, r"gpus=0: must be an integer >= 1"),
    ({"network": "fat-tree"}, r"network='fat-tree': must be one of rail-only, rail-optimized"),
    ({"efficiency": 1.5}, r"efficiency=1.5: must be within \(0, 1\]"),
    ({"hb_tier_size": -1}, r"hb_tier_size=-1: must be an integer >= 0"),
    ({"hb_cross_tier": 2.0}, r"hb_cross_tier=2.0: must be within \(0, 1\]"),
])
def test_platform_rejects_impossible_values(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"gpu": iteration.H100, "gpus": 64, "hb_size": 8, "c_f_bps": 1e12, "c_s_bps": 1e11,
                               **kwargs}
    with pytest.raises(ModelError, match=message):
        Platform(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("par", "batch", "message"), [
    (Parallelism(8, 8, 2), 16, r"tp\*pp\*dp=8\*8\*2=128: must equal gpus=64"),
    (Parallelism(3, 1, 1), 4, r"tp=3: must divide gpt-1t heads=160"),
    (Parallelism(8, 3, 1), 3, r"pp\*interleave=3\*1: must divide gpt-1t layers=128"),
    (Parallelism(8, 4, 2), 3, r"batch=3: must be a multiple of dp\*microbatch=2\*1"),
])
def test_iteration_rejects_impossible_splits(par: Parallelism, batch: int, message: str) -> None:
    gpus = par.tp * par.pp * par.dp if "must equal" not in message else 64
    with pytest.raises(ModelError, match=message):
        iteration.iteration(gpt.MODELS["gpt-1t"], iteration.h100_cluster(gpus, 1), par, batch)


def test_model_rejects_bad_shapes() -> None:
    with pytest.raises(ModelError, match=r"model x hidden=100: must be a multiple of heads=3"):
        gpt.GptModel("x", hidden=100, layers=2, heads=3)
    with pytest.raises(ModelError, match=r"model 'gpt-2t': unknown; known: gpt-22b"):
        gpt.model_by_name("gpt-2t")
    assert math.isfinite(gpt.MODELS["gpt-22b"].hardware_flops(1, "none"))


def test_out_of_sample_runs_use_their_own_recomputation_and_tp() -> None:
    """Korthikanti's full-recompute runs (TP all-reduce, no sequence parallelism) cost more
    than the selective ones with the same efficiency, and the model is within 10% of each
    published time without refitting (docs/rail.md has the table)."""
    eff = iteration.calibrate()
    full = iteration.validation_rows(eff, runs=iteration.OUT_OF_SAMPLE)
    sel = iteration.validation_rows(eff)
    for f, s in zip(full, sel):
        assert f.model == s.model
        assert f.model_s > s.model_s
        assert abs(f.error) < 0.10
    par = iteration.OUT_OF_SAMPLE[0].par
    assert (par.recompute, par.sequence_parallel, par.tp_collectives) == ("full", False, 12)
    assert iteration.Parallelism(8, 1, 1).tp_collectives == iteration.TP_COLLECTIVES_PER_LAYER


def test_parallelism_rejects_unknown_recompute() -> None:
    with pytest.raises(ModelError, match=r"recompute='some': must be one of none, selective, full"):
        iteration.Parallelism(8, 1, 1, recompute="some")
