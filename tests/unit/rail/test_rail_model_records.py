"""The rail models' result records: typed fields, and the saved documents' JSON form."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError

import pytest

from innet.testbed.rail.models import netcost, railperf, report, reproduce
from innet.testbed.rail.models.records import CostRow, MoeRow, PerfRow, Table2Row


def _saved(record: object) -> object:
    """What a saved document holds for ``record`` (its JSON, written and read back)."""
    return json.loads(json.dumps(record.to_json()))  # type: ignore[attr-defined]


def test_records_are_frozen() -> None:
    row = report.cost_rows([netcost.Cluster(16384, 8, 64)], netcost.PUBLIC_PARTS)[0]
    with pytest.raises(FrozenInstanceError):
        row.cost_saving = 0.0  # type: ignore[misc]


def test_cost_row_json_is_both_networks_with_their_switch_totals() -> None:
    cluster = netcost.Cluster(16384, 8, 64)
    row = report.cost_rows([cluster], netcost.PUBLIC_PARTS)[0]
    comp = netcost.compare(cluster, netcost.PUBLIC_PARTS)
    assert isinstance(row, CostRow) and row.rail_only == comp.rail_only
    saved = _saved(row)
    assert saved["gpus_per_domain"] == 8 and saved["cost_saving"] == pytest.approx(comp.cost_saving)
    assert saved["rail_only"]["switches"] == comp.rail_only.switches
    assert saved["rail_only"]["switches_per_tier"] == list(comp.rail_only.switches_per_tier)


def test_perf_row_holds_every_collective_time_of_the_model() -> None:
    grid = railperf.Grid(8, 8, 400e9, 3.6e12)
    row = report.perf_rows(grid, (1 << 20,))[0]
    assert isinstance(row, PerfRow)
    assert row.a2a_rail_only_s == pytest.approx(railperf.alltoall_rail_only(grid, 1 << 20))
    assert row.allreduce_flat_ring_s == pytest.approx(railperf.allreduce_flat_ring(grid, 1 << 20))
    assert set(_saved(row)) == {"bytes", *(f"a2a_{k}" for k in railperf.alltoall_table(grid, 1).keys()),
                                *(f"allreduce_{k}" for k in railperf.allreduce_table(grid, 1).keys())}


def test_fitted_rows_carry_the_leave_one_out_error_and_the_papers() -> None:
    rows = report.validation_rows()
    assert {r.model for r in rows} >= set(report.PAPER_FIG7_ERROR)
    for r in rows:
        assert r.paper_error == report.PAPER_FIG7_ERROR.get(r.model)
        assert r.loo_error != pytest.approx(r.error)  # refitted without the run, not copied
    assert list(_saved(rows[0]))[-3:] == ["efficiency", "loo_error", "paper_error"]


def test_moe_and_table2_rows_keep_the_documents_key_names() -> None:
    moe = reproduce.moe_section(reproduce.AFTER, batches=(256,))
    assert all(isinstance(r, MoeRow) for r in moe)
    saved = _saved(moe[0])
    assert set(saved) == {"platform", "batch", "hb", "rail-optimized", "rail-only", "slowdown", "paper_amdahl"}
    assert saved["rail-only"]["total"] == pytest.approx(moe[0].rail_only.total)
    assert moe[0].slowdown.iteration == pytest.approx(moe[0].rail_only.total / moe[0].rail_optimized.total - 1)
    t2 = reproduce.table2_rows(reproduce.AFTER)[0]
    assert isinstance(t2, Table2Row) and _saved(t2)["K"] == t2.hb_size


def test_reproduction_json_names_each_setting_and_counts_the_claims_within() -> None:
    claims = tuple(c for c in reproduce.CLAIMS if c.key.startswith(("a2a", "intro")))
    rows = {s.name: tuple(reproduce.reproduce(s, claims, with_guesses=True)) for s in (reproduce.BEFORE,
                                                                                      reproduce.AFTER)}
    done = reproduce.Reproduction((reproduce.BEFORE, reproduce.AFTER), rows)
    saved = _saved(done)
    assert done.claims == len(claims) == saved["claims"]
    assert saved["within"] == {n: sum(r.within for r in rs) for n, rs in rows.items()}
    intro = next(r for r in rows["after"] if r.claim.key == "intro_power")
    guess = intro.guesses[0]
    assert guess.name == "switch radix" and {a for a, _ in guess.alternatives} == {"32", "128"}
    row = next(r for r in saved["rows"]["after"] if r["key"] == "intro_power")
    assert row["guesses"][0]["alternatives"]["32"] == pytest.approx(guess.under("32"))
    with pytest.raises(KeyError, match="alternative '16'"):
        guess.under("16")
    assert saved["settings"]["after"]["efficiency"] == pytest.approx(reproduce.AFTER.efficiency())


def test_figure_curves_json_has_the_plots_keys() -> None:
    curves = reproduce.figure_curves(reproduce.AFTER)
    saved = _saved(curves)
    assert set(saved["fig10"]) == {"8", "256"}
    assert all("," in key for key in saved["fig10_paper"])
    assert set(saved["fig8"]) == {m for m, _ in curves.fig8}


def test_bandwidth_sweep_rows_and_gains_keep_the_documents_keys() -> None:
    """A Fig. 9 gain is saved as a row with ``bps`` null beside the measured points, as before."""
    from innet.testbed.rail.models import sweeps

    rows = sweeps.bandwidth_sweep(gpus=1024, batch=256, hb_sizes=(8,))
    gains = [r for r in rows if isinstance(r, sweeps.BandwidthGain)]
    points = [r for r in rows if isinstance(r, sweeps.BandwidthRow)]
    assert [g.vary for g in gains] == ["hb", "nic"] and len(points) == len(sweeps.FIG9_C_F) + len(sweeps.FIG9_C_S)
    hb = [p for p in points if p.vary == "hb"]
    assert gains[0].gain_x4 == pytest.approx(1 - hb[-1].seconds / hb[0].seconds)
    saved = _saved(gains[0])
    assert saved["bps"] is None and saved["paper_gain_x4"] == sweeps.PAPER_FIG9[(8, "hb")]
    assert set(_saved(points[0])) == {"model", "gpus", "hb_size", "batch", "vary", "bps", "seconds", "split"}
