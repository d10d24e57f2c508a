"""The seeds tool trains the bench's slow-link cut in threads and reports gaps to dense."""

from __future__ import annotations

import json
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
