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


def test_clos_switches_per_tier() -> None:
    """Lower tiers take n/(k/2) switches, the top n/k (the paper's Table II counts per tier)."""
    assert netcost.clos_tiers(32768, 64) == (1024, 1024, 512)
    assert netcost.clos_tiers(128, 64) == (4, 2)
    assert netcost.clos_tiers(64, 64) == (1,)


def test_rail_only_removes_tiers_where_the_rails_are_small_enough() -> None:
    """32,768 GH200 GPUs (K = 256) on radix-64 switches: rail-optimized needs 3 tiers (1024 +
    1024 + 512 switches, 196,608 transceivers); each rail of 128 GPUs needs 2 (4 + 2 switches,
    x 256 rails), 131,072 transceivers."""
    c = netcost.compare(netcost.Cluster(gpus=32768, gpus_per_domain=256, radix=64))
    assert c.rail_optimized.switches_per_tier == (1024, 1024, 512)
    assert c.rail_optimized.transceivers == 196608
    assert c.rail_only.switches_per_tier == (1024, 512)
    assert c.rail_only.transceivers == 131072


def test_savings_with_public_prices() -> None:
    """With the public parts (docs/rail.md), dropping one of three tiers saves 36.2% of the cost
    and 36.8% of the power, dropping two 72.3% and 73.6% (the paper: 38-77%, 37-75%); on 32,768
    DGX H100 GPUs with radix 64 the rails of 4,096 still need 3 tiers and nothing is saved."""
    three_two = netcost.compare(netcost.Cluster(32768, 256, 64))
    three_one = netcost.compare(netcost.Cluster(32768, 256, 128))
    assert round(100 * three_two.cost_saving, 1) == 36.2 and round(100 * three_two.power_saving, 1) == 36.8
    assert round(100 * three_one.cost_saving, 1) == 72.3 and round(100 * three_one.power_saving, 1) == 73.6
    assert three_one.cost_saving == pytest.approx(2 * three_two.cost_saving)  # (4r+4) vs (2r+2) over (5r+6)
    assert round(three_two.cost_saving_usd / 1e6) == 79 and round(three_two.power_saving_w / 1e6, 2) == 1.35
    assert round(three_two.rail_optimized.cost_usd / 1e6) == 218
    none = netcost.compare(netcost.Cluster(32768, 8, 64))
    assert none.cost_saving == 0.0 and none.power_saving == 0.0


def test_table2_grid_range() -> None:
    """Over the Table II grid the savings run 27-72% (cost) and 27-74% (power), $39M-$315M and
    0.68-5.42 MW where anything is saved; two radix-64 DGX H100 rows save nothing."""
    rows = [netcost.compare(c) for c in netcost.TABLE2_CLUSTERS]
    saving = [r for r in rows if r.cost_saving > 0]
    assert len(rows) - len(saving) == 2
    assert round(100 * min(r.cost_saving for r in saving)) == 27 and round(100 * max(r.cost_saving for r in saving)) == 72
    assert round(min(r.cost_saving_usd for r in saving) / 1e6) == 39
    assert round(max(r.cost_saving_usd for r in saving) / 1e6) == 315
    assert round(max(r.power_saving_w for r in saving) / 1e6, 2) == 5.42


def test_small_clusters_with_big_domains_cost_more_as_rail_only() -> None:
    """Rail-only needs a switch per rail: 256 rails of 4 GPUs (1,024 GH200 GPUs) on radix-64
    switches use 256 mostly idle switches where rail-optimized needs 48."""
    c = netcost.compare(netcost.Cluster(1024, 256, 64))
    assert c.rail_only.switches == 256 and c.rail_optimized.switches == 48
    assert c.cost_saving < 0


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
    with pytest.raises(ModelError, match=r"parts transceiver_usd=-1: must be a number >= 0"):
        netcost.Parts(1.0, 1.0, -1, 1.0)


def test_bench_slowdown_pairs_repeats_and_applies_amdahl() -> None:
    from innet.testbed.rail.bench import alltoall_slowdown, slowdown_line
    from innet.testbed.rail.records import CollectiveRow

    g = railperf.Grid(4, 2, 2e6, 20e6)
    direct = CollectiveRow("all-to-all direct", 50_000, "bytes/pair", 1.0, 0.9, (1.2, 1.0, 0.9), True, None, "innet")
    two_step = CollectiveRow("all-to-all two-step", 50_000, "bytes/pair", 1.1, 1.0, (1.0, 1.1, 1.26), True, None,
                             "innet")
    record = alltoall_slowdown(direct, two_step, g)
    s = record.to_json()
    assert s["measured"] == pytest.approx(0.1) and s["runs"] == 3
    # sorted and paired: 1.0/0.9, 1.1/1.0, 1.26/1.2
    assert s["spread"] == [pytest.approx(0.05), pytest.approx(1.0 / 0.9 - 1)]
    a = s["amdahl"]
    assert 0.2 < a["a2a_share"] < 0.4 and a["total"] == pytest.approx(a["a2a_share"] * 0.1)
    assert a["paper_totals"] == [pytest.approx(0.27 * 0.082), pytest.approx(0.27 * 0.112)]
    assert "measured 10.0% (median of 3 runs, spread 5.0% to 11.1%)" in slowdown_line(record)
    assert type(record).from_json(s) == record  # a saved document renders the same line
