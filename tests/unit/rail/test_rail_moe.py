"""MoE iteration time by expert placement (``innet.testbed.rail.models.moe``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from innet.testbed.rail.models import iteration, moe, railperf, traffic
from innet.testbed.rail.models.railperf import ModelError


def _cluster(**changes: float) -> moe.MoeCluster:
    base = dict(gpu=iteration.A100, gpus=128, hb_size=8, c_f_bps=2.4e12, c_s_bps=200e9, efficiency=0.7)
    base.update(changes)
    return moe.MoeCluster(**base)  # type: ignore[arg-type]


def test_alltoall_term_is_the_railperf_formula() -> None:
    """Four all-to-alls per MoE layer, each pair exchanging tokens x h x 2 B / experts."""
    c = _cluster()
    m = traffic.MOE_1_3B
    r = moe.moe_iteration(m, c, 512, "rail-only")
    pair = 512 // 128 * m.seq * m.hidden * 2 / m.experts
    assert r.alltoall == pytest.approx(4 * m.moe_layers * railperf.alltoall_rail_only(c.grid(16), pair))
    assert r.expert_allreduce == 0.0  # one expert per GPU, 128 GPUs: no replica


def test_recomputation_redoes_the_forward_alltoalls_and_compute() -> None:
    """With activation checkpointing each MoE layer runs six all-to-alls instead of four, and
    the dense FLOPs are the fully recomputed ones."""
    c = _cluster()
    plain = moe.moe_iteration(traffic.MOE_1_3B, c, 512, "rail-only")
    again = moe.moe_iteration(replace(traffic.MOE_1_3B, recompute=True), c, 512, "rail-only")
    assert again.alltoall == pytest.approx(1.5 * plain.alltoall)
    assert again.dense_allreduce == plain.dense_allreduce
    assert again.compute > plain.compute


def test_rail_only_costs_the_forwarding_tax_and_little_of_the_iteration() -> None:
    out = moe.compare(traffic.MOE_1_3B, _cluster(), 512)
    s = out["slowdown"]
    grid = _cluster().grid(16)
    assert s["alltoall"] == pytest.approx(railperf.alltoall_slowdown(grid))
    assert 0 < s["iteration"] < s["alltoall"] * s["alltoall_time_share"] * 1.0001
    # experts inside the HB domain avoid the NIC all-to-all but all-reduce 16 replicas of each expert
    assert out["hb"]["alltoall"] < out["rail-optimized"]["alltoall"]
    assert out["hb"]["expert_allreduce"] > out["rail-optimized"]["total"]


def test_compute_scales_with_the_batch_and_the_nic_moves_the_alltoall() -> None:
    a = moe.moe_iteration(traffic.MOE_1_3B, _cluster(), 256, "rail-optimized")
    b = moe.moe_iteration(traffic.MOE_1_3B, _cluster(), 512, "rail-optimized")
    assert b.compute == pytest.approx(2 * a.compute)
    fast = moe.moe_iteration(traffic.MOE_1_3B, _cluster(c_s_bps=400e9), 512, "rail-optimized")
    assert fast.alltoall == pytest.approx(b.alltoall / 2)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: moe.moe_iteration(traffic.MOE_1_3B, _cluster(), 500, "rail-only"),
     r"batch=500: must be a positive multiple of gpus=128"),
    (lambda: moe.moe_iteration(traffic.MOE_1_3B, _cluster(), 512, "spine"),
     r"placement='spine': must be one of hb, rail-optimized, rail-only"),
    (lambda: _cluster(hb_size=7), r"hb_size=7: must divide gpus=128"),
])
def test_moe_rejects_impossible_values(call: object, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        call()  # type: ignore[operator]
