"""``innet model iteration|sweep|traffic|cost`` through the CLI entry point: outputs written,
and every impossible value one line on stderr naming it, exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from innet.cli import main


def test_iteration_writes_validation_and_configuration(tmp_path: Path) -> None:
    assert main(["model", "iteration", "--gpt", "gpt-146b", "--gpus", "1024", "--hb-size", "8", "--batch", "512",
                 "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "model-iteration.json").read_text())
    assert [r["model"] for r in doc["validation"]] == ["gpt-22b", "gpt-175b", "gpt-530b", "gpt-1t"]
    results = doc["configuration"]["results"]
    assert [r["network"] for r in results] == ["rail-only", "rail-optimized"]
    assert (tmp_path / "model-iteration.png").stat().st_size > 0


def test_gh200_tiers_and_megatron_2021_slow_a_k256_split_and_are_recorded(tmp_path: Path) -> None:
    """One fixed split at K = 256 (TP 8, DP 64 with one member per 8-GPU board): DGX GH200's
    tiers lengthen the exposed DP reduction; Megatron-LM 2021 exposes it and the sends."""
    base = ["model", "iteration", "--gpt", "gpt-146b", "--gpus", "512", "--hb-size", "256", "--batch", "512",
            "--tp", "8", "--pp", "1", "--dp", "64", "--out"]
    totals = {}
    for name, extra in (("flat", []), ("tiers", ["--hb-tiers"]), ("2021", ["--megatron-2021"]),
                        ("both", ["--hb-tiers", "--megatron-2021"])):
        out = tmp_path / name
        assert main([*base, str(out), *extra]) == 0
        doc = json.loads((out / "model-iteration.json").read_text())
        totals[name] = doc["configuration"]["results"][0]["breakdown"]
        assert set(doc["variants"]) == ({"hb_tier_size", "hb_cross_tier"} if "--hb-tiers" in extra else set()) | (
            {"dp_overlap", "pp_overlap"} if "--megatron-2021" in extra else set())
    assert totals["2021"]["data"] > totals["flat"]["data"]
    assert totals["both"]["data"] > totals["2021"]["data"]
    assert totals["tiers"]["tensor"] == pytest.approx(totals["flat"]["tensor"])


def test_hb_size_sweep_keeps_the_ideal_flat_under_tiers(tmp_path: Path) -> None:
    assert main(["model", "sweep", "hb-size", "--gpt", "gpt-146b", "--gpus", "1024", "--batch", "512", "--hb-tiers",
                 "--out", str(tmp_path)]) == 0
    tiered = json.loads((tmp_path / "model-sweep-hb-size.json").read_text())
    assert main(["model", "sweep", "hb-size", "--gpt", "gpt-146b", "--gpus", "1024", "--batch", "512",
                 "--out", str(tmp_path)]) == 0
    flat = json.loads((tmp_path / "model-sweep-hb-size.json").read_text())
    by_k = {r["hb_size"]: r for r in flat["rows"]}
    for row in tiered["rows"]:
        if row["hb_size"] in (1024,) or row["hb_size"] <= 8:
            assert row["seconds"] == pytest.approx(by_k[row["hb_size"]]["seconds"])
        else:
            assert row["seconds"] >= by_k[row["hb_size"]]["seconds"] - 1e-12
    assert tiered["variants"]["hb_tier_size"] == 8


def test_traffic_and_cost_sweep_write_png(tmp_path: Path) -> None:
    assert main(["model", "traffic", "--pp", "8", "--dp", "4", "--batch", "64", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "model-traffic.json").read_text())["summary"]
    assert summary["megatron"]["gpus"] == 256 and summary["moe"]["a2a_share"] > 0
    assert main(["model", "sweep", "cost", "--gpus", "16384,32768", "--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} >= {"model-traffic.png", "model-sweep-cost.json",
                                                     "model-sweep-cost.png"}


def test_batch_sweep_small(tmp_path: Path) -> None:
    assert main(["model", "sweep", "batch", "--gpus", "1024", "--batches", "256,512", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "model-sweep-batch.json").read_text())["rows"]
    assert {r["batch"] for r in rows} == {256, 512} and all(0 < r["relative"] <= 1.0 + 1e-9 for r in rows)


@pytest.mark.parametrize(("argv", "message"), [
    (["iteration", "--gpt", "gpt-1t", "--gpus", "32768", "--hb-size", "7"],
     "innet model iteration: hb_size=7: must divide gpus=32768"),
    (["iteration", "--gpt", "gpt-1t", "--c-f", "0"], "innet model iteration: c_f (HB bandwidth)=0.0: must be a number > 0"),
    (["iteration", "--gpt", "gpt-1t", "--c-s", "-400"],
     "innet model iteration: c_s (NIC bandwidth)=-400000000000.0: must be a number > 0"),
    (["iteration", "--gpt", "gpt-1t", "--gpus", "64", "--tp", "8", "--pp", "4", "--dp", "4"],
     "innet model iteration: tp*pp*dp=8*4*4=128: must equal gpus=64"),
    (["cost", "--gpus", "4096", "--radix", "1"], "innet model cost: cluster radix=1: must be even and >= 2"),
    (["cost", "--gpus", "4096", "--radix", "0"], "innet model cost: cluster radix=0: must be an integer >= 1"),
    (["cost", "--gpus", "1000", "--hb-size", "256"],
     "innet model cost: cluster gpus=1000: must be a multiple of gpus_per_domain=256"),
    (["sweep", "cost", "--radix", "1"], "innet model sweep: cluster radix=1: must be even and >= 2"),
    (["sweep", "batch", "--gpus", "1024", "--batches", "0"], "innet model sweep: batch=0: must be an integer >= 1"),
    (["sweep", "hb-size", "--gpus", "0"], "innet model sweep: gpus=0: must be an integer >= 1"),
    (["traffic", "--hb-size", "5"], "innet model traffic: hb_size=5: must divide gpus=3072"),
    (["collectives", "--c-s", "0"], "innet model collectives: grid c_s_bps=0.0: must be a number > 0 (bit/s)"),
    (["iteration", "--gpus", "many"], "innet model iteration: error: argument --gpus: 'many' is not an integer"),
])
def test_impossible_values_are_one_line_exit_2(argv: list[str], message: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", *argv, "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == message
    assert "Traceback" not in captured.err and "usage" not in captured.err


def test_every_command_uses_the_reproduction_defaults(tmp_path: Path) -> None:
    """The same question gets the same number from ``iteration``, ``sweep``, ``cost``,
    ``traffic`` and ``reproduce``: all take :data:`reproduce.DEFAULT`'s settings."""
    from innet.testbed.rail.models import iteration, reproduce, sweeps, traffic
    from innet.testbed.rail.models.gpt import model_by_name

    setting = reproduce.DEFAULT
    assert main(["model", "iteration", "--gpt", "gpt-146b", "--gpus", "1024", "--batch", "512",
                 "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "model-iteration.json").read_text())
    assert doc["efficiency"] == pytest.approx(setting.efficiency())
    assert doc["hb_efficiency"] == setting.hb_efficiency
    platform = iteration.Platform(iteration.H100, 1024, 8, 3.6e12, 400e9, "rail-only",
                                  **dict(setting.platform_options()))
    _, expected = iteration.best(model_by_name("gpt-146b"), platform, 512)
    assert doc["configuration"]["results"][0]["breakdown"]["total"] == pytest.approx(expected.total)

    assert main(["model", "sweep", "batch", "--gpus", "1024", "--batches", "256", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "model-sweep-batch.json").read_text())["rows"]
    direct = sweeps.batch_sweep("gpt-1t", 1024, (256,), **dict(setting.platform_options()))
    assert [r["seconds"] for r in rows] == pytest.approx([r.seconds for r in direct])

    assert main(["model", "cost", "--gpus", "16384", "--out", str(tmp_path)]) == 0
    cost = json.loads((tmp_path / "model-cost.json").read_text())["rows"][0]
    row = next(r for r in reproduce.table2_rows(setting) if (r.gpus, r.hb_size, r.radix) == (16384, 8, 64))
    assert cost["power_saving_w"] == pytest.approx(row.power_saving_w)
    assert cost["cost_saving_usd"] == pytest.approx(row.cost_saving_usd)

    assert main(["model", "traffic", "--pp", "8", "--dp", "4", "--batch", "64", "--out", str(tmp_path)]) == 0
    tr = json.loads((tmp_path / "model-traffic.json").read_text())
    assert tr["megatron"]["tp_scheme"] == setting.tp_scheme
    assert traffic.TP_SCHEMES[setting.tp_scheme] > 0
