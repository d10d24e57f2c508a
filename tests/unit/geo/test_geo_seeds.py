"""The seeds tool trains the bench's slow-link cut in threads and reports gaps to dense."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from innet.testbed.geo.seeds import main, train, variants


def test_the_default_topk_variant_is_the_benchs_and_trains(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topk = variants()["topk"]
    assert topk is not None and (topk.gradients, topk.values, topk.ratio) == ("int4", "int8-bf16", 0.28125)
    dense, top = train("dense", None, 0, steps=3), train("topk", topk, 0, steps=3)
    assert top.kb_per_step < dense.kb_per_step / 3  # int8 warm-up (72 B per row and direction) against dense 256
    assert main(["--only", "topk", "--steps", "2", "--seeds", "0", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "topk             test gap" in out
    rows = [json.loads(line) for line in next(tmp_path.glob("geo-topk-seeds-*.jsonl")).read_text().splitlines()]
    assert [r["name"] for r in rows] == ["dense", "topk"]


def test_an_unknown_variant_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--only", "zip"]) == 2
    assert capsys.readouterr().err.strip().startswith("seeds: unknown variant 'zip' (variants: dense, int8, topk")


def test_the_adatopk_variant_follows_the_modelled_link_rate() -> None:
    """Links in virtual time: after the int8 warm-up the default AdaTopK keeps 31 of 32 columns on
    the slow-link WAN's 10 Mbit/s (the dense message does not cross within the period), goes
    dense at 100 Mbit/s and to its floor at 0.5 Mbit/s, the same on any machine."""
    ada = variants()["adatopk"]
    assert ada is not None and ada.max_ratio == 1.0 and ada.min_ratio == 0.28125
    steps = ada.warmup_steps + 12
    row = train("adatopk", replace(ada, ratio_patience=1), 0, steps=steps,
                changes={ada.warmup_steps + 2: 100.0, ada.warmup_steps + 8: 0.5})
    after = row.ratios[ada.warmup_steps:]
    assert row.ratios[:ada.warmup_steps] == (1.0,) * ada.warmup_steps  # int8 warm-up, ratio 1
    assert after[0] == 31 / 32 and 1.0 in after[2:8] and after[-1] == 0.28125, row.ratios


def test_a_bad_rate_change_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["--rate-change", "5:0"])
    assert refused.value.code == 2
    assert "rate change '5:0': expected a step >= 0 and a rate > 0" in capsys.readouterr().err
