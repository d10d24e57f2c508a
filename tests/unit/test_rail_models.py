"""The rail models: collective completion times, switch/transceiver counts, cost and power."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.cli import main
from innet.testbed.rail.models import netcost, railperf
from innet.testbed.rail.models.railperf import Grid, ModelError


def test_alltoall_formulas_on_a_small_grid() -> None:
    g = Grid(gpus_per_domain=4, domains=2, c_s_bps=8e6, c_f_bps=80e6)  # 1 MB/s NIC, 10 MB/s HB
    # direct: max(3 * 1 MB / 10 MB/s, 4 * 1 * 1 MB / 1 MB/s) = 4 s
    assert railperf.alltoall_rail_optimized(g, 1e6) == pytest.approx(4.0)
    # two-step: 2 * 3 * 1 MB / 10 MB/s + 4 s
    assert railperf.alltoall_rail_only(g, 1e6) == pytest.approx(4.6)
    assert railperf.alltoall_slowdown(g) == pytest.approx(0.15)


def test_seed_slowdowns_are_about_cs_over_cf() -> None:
    """The seed: 8.2% (DGX A100) and 11.2% (DGX H100); y(x-1) = x(y-1) on an 8x8 grid makes
    the slowdown exactly C_S/C_F: 200/2400 and 400/3600."""
    a100, h100 = railperf.SEED_PLATFORMS["dgx-a100"], railperf.SEED_PLATFORMS["dgx-h100"]
    assert railperf.alltoall_slowdown(a100) == pytest.approx(1 / 12)
    assert railperf.alltoall_slowdown(h100) == pytest.approx(1 / 9)
    assert round(100 * railperf.alltoall_slowdown(a100)) == 8
    assert round(100 * railperf.alltoall_slowdown(h100)) == 11


def test_allreduce_formulas() -> None:
    g = Grid(gpus_per_domain=4, domains=2, c_s_bps=8e6, c_f_bps=80e6)
    s = 4e6  # bytes
    hb = 2 * 3 * s / 4 / 10e6
    assert railperf.allreduce_hierarchical_ina(g, s) == pytest.approx(hb + s / 4 / 1e6)
    assert railperf.allreduce_hierarchical_ring(g, s) == pytest.approx(hb + 2 * 1 * s / 8 / 1e6)
    assert railperf.allreduce_flat_ina(g, s) == pytest.approx(4.0)
    assert railperf.allreduce_flat_ring(g, s) == pytest.approx(2 * 7 * s / 8 / 1e6)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"gpus_per_domain": 0}, r"grid gpus_per_domain=0: must be an integer >= 1"),
    ({"c_s_bps": 0}, r"grid c_s_bps=0: must be a number > 0"),
])
def test_grid_rejects_bad_values(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"gpus_per_domain": 2, "domains": 2, "c_s_bps": 1.0, "c_f_bps": 2.0, **kwargs}
    with pytest.raises(ModelError, match=message):
        Grid(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("n", "k", "expected"), [
    (64, 64, (1, 1, 128)), (2048, 64, (2, 96, 8192)), (2049, 64, (3, 163, 12294)), (65536, 64, (3, 5120, 393216)),
])
def test_clos_counts(n: int, k: int, expected: tuple[int, int, int]) -> None:
    assert netcost.clos(n, k) == expected


def test_cost_model_reproduces_the_seeds_savings_range() -> None:
    """Table II of the seed: rail-only saves 38-77% of the cost and 37-75% of the power; and a
    rail-optimized network of ~30,000 GPUs costs ~$200M and draws ~4.6 MW (inputs: SEED_PARTS)."""
    rows = [netcost.compare(c) for c in netcost.SEED_CLUSTERS]
    cost = sorted(round(100 * r.cost_saving) for r in rows)
    power = sorted(round(100 * r.power_saving) for r in rows)
    assert (cost[0], cost[-1]) == (38, 77)
    assert (power[0], power[-1]) == (37, 75)
    big = netcost.compare(netcost.Cluster(gpus=32768, gpus_per_domain=8, radix=64)).rail_optimized
    assert round(big.cost_usd / 1e6, -1) == 200
    assert round(big.power_w / 1e6, 1) == 4.6


def test_cluster_rejects_uneven_domains() -> None:
    with pytest.raises(ModelError, match=r"cluster gpus=100: must be a multiple of gpus_per_domain=8"):
        netcost.Cluster(gpus=100, gpus_per_domain=8, radix=64)


def test_model_cli_writes_json_and_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "cost", "--out", str(tmp_path)]) == 0
    assert main(["model", "collectives", "-x", "4", "-y", "2", "--sizes", "1K", "--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"model-cost.json", "model-cost.png",
                                                     "model-collectives.json", "model-collectives.png"}
    assert main(["model", "cost", "--gpus", "100", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == ("innet model cost: cluster gpus=100: must be a multiple of "
                                               "gpus_per_domain=8")
