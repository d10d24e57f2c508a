"""``innet model reproduce``: every row computed from its inputs, the JSON's shape, the PNGs."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from innet.testbed.rail.models import netcost, report, reproduce
from innet.testbed.rail.models.railperf import ModelError

ROW_KEYS = {"key", "where", "what", "paper", "unit", "kind", "tolerance", "innet", "within", "inputs", "guesses",
            "would_agree", "cause", "note"}


def _claim(key: str) -> reproduce.Claim:
    return next(c for c in reproduce.CLAIMS if c.key == key)


def test_changing_an_input_changes_the_row() -> None:
    """The NVLink efficiency moves the Fig. 9 HB-bandwidth row; the power model moves the
    introduction's megawatts; nothing is a stored innet number."""
    fig9 = _claim("fig9_k8_hb")
    slow = reproduce.reproduce_claim(fig9, replace(reproduce.AFTER, hb_efficiency=0.5), with_guesses=False)
    fast = reproduce.reproduce_claim(fig9, replace(reproduce.AFTER, hb_efficiency=1.0), with_guesses=False)
    assert slow.value > fast.value  # a slower NVLink makes 4x its bandwidth worth more
    power = _claim("intro_power")
    typical = reproduce.reproduce_claim(power, replace(reproduce.AFTER, peak_power=False), with_guesses=False)
    peak = reproduce.reproduce_claim(power, reproduce.AFTER, with_guesses=False)
    assert peak.value > typical.value
    net = netcost.rail_optimized(netcost.Cluster(30000, 8, 64), netcost.PEAK_PARTS)
    assert peak.value == pytest.approx(net.power_w / 1e6)


def test_guesses_are_recomputed_under_their_alternatives() -> None:
    row = reproduce.reproduce_claim(_claim("fig8_146b"), reproduce.AFTER)
    names = {g.name for g in row.guesses}
    assert names == {"cluster size", "global batch", "communication overlap", "gradient reduce bytes",
                     "K = 256 fabric"}
    fp32 = next(g for g in row.guesses if g.name == "gradient reduce bytes").under("4")
    value, inputs = _claim("fig8_146b").compute(reproduce.AFTER, reproduce.GuessArgs(grad_bytes=4))
    assert inputs["grad_bytes"] == 4 and value == pytest.approx(fp32) and fp32 > row.value
    sizes = dict(next(g for g in row.guesses if g.name == "cluster size").alternatives)
    assert set(sizes) == {"16384", "65536"}
    assert len({round(v, 6) for v in sizes.values()} | {round(row.value, 6)}) == 3


def test_gh200_two_tiers_are_shown_beside_the_papers_flat_domain() -> None:
    """The paper's flat K = 256 domain is the value; DGX GH200's published two tiers are the
    alternative, slower at K = 256 against the same flat ideal, and absent from K = 8 rows."""
    for key in ("fig8_1t", "fig8_146b", "fig10_k256_256"):
        row = reproduce.reproduce_claim(_claim(key), reproduce.AFTER)
        fabric = next(g for g in row.guesses if g.name == "K = 256 fabric")
        assert fabric.value == "flat"
        two_tier = fabric.under(reproduce.GH200_TWO_TIERS)
        assert (two_tier > row.value) if key.startswith("fig8") else (two_tier < row.value)
    assert all(g.name != "K = 256 fabric" for g in
               reproduce.reproduce_claim(_claim("fig9_k8_hb"), reproduce.AFTER).guesses)


def test_fig9_held_bandwidth_is_a_named_reading() -> None:
    """Fig. 9 varies one bandwidth at a time; where the other is held is a guess with both
    readings computed, and the row's inputs name the held one. Holding the NIC at 100 Gbit/s
    makes the NIC a bigger part of the time, so 4x HB bandwidth is worth less at K = 8."""
    row = reproduce.reproduce_claim(_claim("fig9_k8_hb"), reproduce.AFTER)
    held = next(g for g in row.guesses if g.name == "other bandwidth held at")
    assert held.value == reproduce.HELD_H100
    assert held.under(reproduce.HELD_LOWEST) < row.value
    assert row.inputs["range"] == "C_F 2.4->9.6 Tbit/s, C_S 400 Gbit/s"
    _, inputs = _claim("fig9_k256_nic").compute(reproduce.AFTER, reproduce.GuessArgs(held=reproduce.HELD_LOWEST))
    assert inputs["range"] == "C_S 100->400 Gbit/s, C_F 2.4 Tbit/s"


def test_fig9_gain_reading_follows_the_setting_and_both_are_shown() -> None:
    """'after' reads section V-C's improvement as a speedup (section V-D's performance is ideal
    time / time), 'before' as time saved; the guess column recomputes both on every row, and
    the two readings are one pair of iteration times."""
    claim = _claim("fig9_k8_nic")
    after = reproduce.reproduce_claim(claim, reproduce.AFTER)
    before = reproduce.reproduce_claim(claim, replace(reproduce.AFTER, fig9_speedup=False), with_guesses=False)
    gain = next(g for g in after.guesses if g.name == "Fig. 9 gain")
    assert after.value == pytest.approx(gain.under(reproduce.GAIN_SPEEDUP))
    assert before.value == pytest.approx(gain.under(reproduce.GAIN_TIME_SAVED))
    assert after.value == pytest.approx(before.value / (1 - before.value))
    assert after.inputs["gain"] == reproduce.GAIN_SPEEDUP and before.inputs["gain"] == reproduce.GAIN_TIME_SAVED
    assert not reproduce.BEFORE.fig9_speedup and reproduce.AFTER.fig9_speedup


def test_bandwidth_sweep_prints_the_speedup_beside_the_reduction() -> None:
    from innet.testbed.rail.models import sweeps

    rows = sweeps.bandwidth_sweep(gpus=1024, batch=256, hb_sizes=(8,))
    gain = next(r for r in rows if isinstance(r, sweeps.BandwidthGain) and r.vary == "nic")
    points = [r.seconds for r in rows if isinstance(r, sweeps.BandwidthRow) and r.vary == "nic"]
    assert gain.speedup_x4 == pytest.approx(points[0] / points[-1] - 1)


def test_moe_activation_checkpointing_is_shown_beside_the_share() -> None:
    """Recomputing the forward redoes its two all-to-alls per MoE layer: 6 instead of 4, so
    the all-to-all's bytes grow by half against the same dense all-reduce."""
    row = reproduce.reproduce_claim(_claim("fig5_a2a_share"), reproduce.AFTER)
    assert row.inputs["activation checkpointing"] is False
    on = next(g for g in row.guesses if g.name == "MoE activation checkpointing").under(reproduce.MOE_RECOMPUTE)
    ratio_off, ratio_on = row.value / (1 - row.value), on / (1 - on)
    assert ratio_on == pytest.approx(1.5 * ratio_off)


def test_megatron_2021_schedule_exposes_the_dp_reduction_and_pipeline_sends() -> None:
    """Under Megatron-LM 2021's schedule (gradients reduced after the backward pass, blocking
    sends) GPT-146B's K = 256 slowdown grows: the DP reduction crosses the NIC at K = 256 but
    not in the ideal; the inputs name both overlaps."""
    row = reproduce.reproduce_claim(_claim("fig8_146b"), reproduce.AFTER)
    overlap = next(g for g in row.guesses if g.name == "communication overlap")
    assert overlap.under(reproduce.MEGATRON_2021) > 2 * row.value
    value, inputs = _claim("fig8_146b").compute(reproduce.AFTER, reproduce.GuessArgs(overlap=reproduce.MEGATRON_2021))
    assert inputs["dp_overlap"] is False and inputs["pp_overlap"] is False
    assert value == pytest.approx(overlap.under(reproduce.MEGATRON_2021))


def test_model_alternatives_are_judged_on_the_published_runs() -> None:
    """'as used' is the setting itself (its medians and count); each alternative refits the
    efficiency under its options and is recomputed, not copied."""
    rows = {r.alternative: r for r in reproduce.model_alternatives(reproduce.AFTER)}
    assert set(rows) == {"as used", *reproduce.ALTERNATIVES}
    used = rows["as used"]
    oos = reproduce.out_of_sample(reproduce.AFTER)
    assert used.a100_out_of_sample == pytest.approx(oos.median_abs_error)
    assert used.h100 == pytest.approx(oos.h100.median_abs_error)
    assert used.within == sum(r.within for r in reproduce.reproduce(reproduce.AFTER, with_guesses=False))
    fp32 = rows["gradients reduced in fp32"]
    assert fp32.h100 == pytest.approx(oos.h100.effect("grad_bytes=4"))
    tp_async = replace(reproduce.AFTER, options=(("tp_async_backward", True),))
    assert rows["TP backward collectives beside the GEMMs"].efficiency == pytest.approx(tp_async.efficiency())
    assert tp_async.efficiency() != pytest.approx(reproduce.AFTER.efficiency())


def test_tolerance_rule() -> None:
    small = reproduce.Claim("x", "§", "x", 0.08, "%", lambda s, g: (0.0, {}))
    large = reproduce.Claim("y", "§", "y", 0.359, "%", lambda s, g: (0.0, {}))
    money = reproduce.Claim("z", "§", "z", 200.0, "$M", lambda s, g: (0.0, {}))
    assert small.tolerance() == pytest.approx(0.01)
    assert large.tolerance() == pytest.approx(0.0359)
    assert money.within(219.0) and not money.within(221.0)
    bound = reproduce.Claim("b", "§", "b", 0.99, "%", lambda s, g: (0.0, {}), "at_least")
    assert bound.within(0.995) and not bound.within(0.98)


def test_fig10_reading_decides_whether_time_falls() -> None:
    """Per iteration the time rises with the batch; per sequence it falls (the paper's curve)."""
    falls = _claim("fig10_falls")
    per_iteration = reproduce.reproduce_claim(falls, replace(reproduce.AFTER, per_sequence=False))
    per_sequence = reproduce.reproduce_claim(falls, reproduce.AFTER)
    assert not per_iteration.within and per_sequence.within
    times = per_sequence.inputs["times"]
    assert times == sorted(times, reverse=True)


def test_peak_power_counts_switch_optics_once() -> None:
    """With the switch maximum (its optics included) only the NIC-end transceivers add power;
    dropping one of three tiers then saves 37.5% and two of three 75.0%."""
    one = netcost.compare(netcost.Cluster(16384, 8, 64), netcost.PEAK_PARTS)
    two = netcost.compare(netcost.Cluster(16384, 256, 64), netcost.PEAK_PARTS)
    assert one.power_saving == pytest.approx(0.375, abs=0.001)
    assert two.power_saving == pytest.approx(0.75, abs=0.001)
    assert one.rail_optimized.power_w == pytest.approx(one.rail_optimized.switches * 1720 + 16384 * 9)


def test_probe_scans_every_combination_and_labels_it() -> None:
    probe = reproduce.Probe.over(cluster_size=(16384, 32768), global_batch=(1024, 2048, 4096))
    assert probe.names == ("cluster size", "global batch")
    assert len(probe.values) == 6 and (32768, 2048) in probe.values
    assert probe.label((32768, 2048)) == "cluster size=32768, global batch=2048"


def test_a_probe_reports_where_a_miss_would_agree_without_adopting_it() -> None:
    """The scan is information: the row keeps its guessed value, each scanned number is the
    claim recomputed under that combination, and the cause says it is not adopted."""
    claim = _claim("t2_usd_low")
    row = reproduce.reproduce_claim(claim, reproduce.AFTER)
    plain = reproduce.reproduce_claim(claim, reproduce.AFTER, with_guesses=False)
    assert row.value == plain.value and not row.within and plain.probes == ()
    (probe,) = row.probes
    scanned = dict(probe.scanned)
    assert scanned["Table II rows=all, price scale=1.0"] == pytest.approx(row.value)
    value, _ = claim.compute(reproduce.AFTER, reproduce.GuessArgs(grid="32k-65k GPUs", price_scale=2.0))
    assert scanned["Table II rows=32k-65k GPUs, price scale=2.0"] == pytest.approx(value)
    assert probe.within_at == tuple(label for label, v in probe.scanned if claim.within(v))
    assert "not adopted" in row.cause and probe.to_json()["adopted"] is False


def test_section_one_and_table_two_money_need_different_prices() -> None:
    """innet's prices give section I's $200M for 30,000 GPUs and only they do among the scanned
    scales, while neither end of Table II's money range is within at those prices on any grid."""
    intro = reproduce.reproduce_claim(_claim("intro_cost"), reproduce.AFTER)
    assert intro.within and intro.probes[0].within_at == ("price scale=1.0",)
    for key in ("t2_usd_low", "t2_usd_high"):
        row = reproduce.reproduce_claim(_claim(key), reproduce.AFTER)
        assert row.probes[0].within_at
        assert not any(label.endswith("price scale=1.0") for label in row.probes[0].within_at)


def test_unknown_setting_is_named() -> None:
    with pytest.raises(ModelError, match=r"setting 'later': unknown; known: before, after"):
        reproduce.settings_by_name("later")


def test_json_schema_and_pngs(tmp_path: Path) -> None:
    claims = tuple(c for c in reproduce.CLAIMS if c.key.startswith(("a2a", "fig9_k8", "intro", "fig10_falls")))
    rows = {s.name: tuple(reproduce.reproduce(s, claims)) for s in (reproduce.BEFORE, reproduce.AFTER)}
    paths = report.save_reproduction(reproduce.Reproduction((reproduce.BEFORE, reproduce.AFTER), rows), tmp_path)
    loaded = json.loads((tmp_path / "reproduce.json").read_text())
    assert set(loaded) == {"model", "settings", "rows", "within", "claims"}
    assert loaded["claims"] == len(claims)
    for name in ("before", "after"):
        assert set(loaded["settings"][name]) >= {"hb_efficiency", "efficiency", "peak_power"}
        for row in loaded["rows"][name]:
            assert set(row) == ROW_KEYS
            assert isinstance(row["innet"], float)
            assert row["within"] == reproduce.CLAIMS[[c.key for c in reproduce.CLAIMS].index(row["key"])].within(
                row["innet"])
            assert row["within"] or row["cause"]
    pngs = [p for p in paths if p.suffix == ".png"]
    assert {p.name for p in pngs} == {"reproduce-fig9.png", "reproduce-table2-cost-power.png",
                                      "reproduce-fig2-5-traffic.png"}
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_every_claim_cites_where_and_every_miss_has_a_cause() -> None:
    rows = reproduce.reproduce(reproduce.AFTER, with_guesses=False)
    assert len(rows) == len(reproduce.CLAIMS) >= 31
    assert len({c.key for c in reproduce.CLAIMS}) == len(reproduce.CLAIMS)
    for row in rows:
        assert row.claim.where.startswith("§")
        assert row.within or row.cause not in ("", "not traced"), row.claim.key


def test_cli_reproduce_writes_table_json_and_pngs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run([str(Path(sys.executable).with_name("innet")), "model", "reproduce", "--out", str(out), "--no-guesses"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "within" in proc.stdout and "Fig. 9" in proc.stdout
    doc = json.loads((out / "reproduce.json").read_text())
    assert set(doc["rows"]) == {"before", "after"}
    assert len(list(out.glob("reproduce-*.png"))) == len(report.FIGURE_GROUPS) + 1  # + the Fig. 8/10 curves
    assert doc["out_of_sample"]["after"]["median_abs_error"] < 0.10
    assert len(doc["out_of_sample"]["after"]["h100"]["rows"]) == 9
    assert "Out-of-sample validation on H100" in proc.stdout
    assert "Out-of-sample validation" in proc.stdout and "MoE-1.3B" in proc.stdout
    assert {r["platform"] for r in doc["moe"]["after"]} == {"dgx-a100", "dgx-h100"}
    assert set(doc["curves"]) == {"before", "after"} and set(doc["curves"]["after"]["fig10"]) == {"8", "256"}
    assert "Model alternatives" in proc.stdout
    assert [r["alternative"] for r in doc["alternatives"]] == ["as used", *reproduce.ALTERNATIVES]


def test_cli_reproduce_rejects_a_bad_override(tmp_path: Path) -> None:
    proc = subprocess.run([str(Path(sys.executable).with_name("innet")), "model", "reproduce", "--out", str(tmp_path),
                           "--setting", "after", "--hb-efficiency", "1.5", "--no-guesses"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "innet model reproduce: hb_efficiency=1.5: must be within (0, 1]"


def test_table2_rows_flag_where_one_tier_fewer_cannot_connect_a_rail() -> None:
    """K = 8, radix 64, 32,768 GPUs: a rail of 4,096 GPUs needs three tiers like the whole
    cluster (two tiers of radix 64 hold 2,048), so nothing is saved; the literal one-tier-fewer
    reading is infeasible there and innet's count stands."""
    rows = {(r.gpus, r.hb_size, r.radix): r for r in reproduce.table2_rows(reproduce.AFTER)}
    assert len(rows) == len(netcost.TABLE2_CLUSTERS)
    bad = rows[(32768, 8, 64)]
    assert (bad.literal_tiers, bad.literal_capacity, bad.literal_feasible) == (2, 2048, False)
    assert bad.cost_saving == 0.0
    good = rows[(16384, 8, 64)]
    assert good.agrees and good.power_saving == pytest.approx(0.375, abs=0.001)
    assert good.rail_only.switches_per_tier == (512, 256)
    saved = good.to_json()
    assert (saved["K"], saved["rail_only"]["switches_per_tier"]) == (8, (512, 256))


def test_reproduction_figures_are_readable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No overlapping or cut-off text and no legend entry without a drawing, on every PNG."""
    from testkit.plots import check_figure, keep_figures

    figures = keep_figures(monkeypatch)
    settings = (reproduce.BEFORE, reproduce.AFTER)
    rows = {s.name: tuple(reproduce.reproduce(s, with_guesses=False)) for s in settings}
    curves = {s.name: reproduce.figure_curves(s) for s in settings}
    report.save_reproduction(reproduce.Reproduction(settings, rows, curves), tmp_path)
    assert len(figures) == len(report.FIGURE_GROUPS) + 1
    problems = {f.axes[0].get_title(): check_figure(f) for f in figures}
    assert all(not p for p in problems.values()), problems
