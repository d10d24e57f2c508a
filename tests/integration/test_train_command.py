"""``innet train``: the demo's bring-up and training without its allreduce benchmark, on the
loopback testbed (no root): exit status from the training checks, result JSON and plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from innet.cli import main

pytestmark = pytest.mark.slow


def test_train_on_a_loopback_star(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--backend", "loopback", "--workers", "2", "--steps", "20", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "innet train" in out and "benchmark:" not in out
    (doc_path,) = tmp_path.glob("train-*.json")
    doc = json.loads(doc_path.read_text())
    t = doc["training"]
    assert t["steps"] == 20 and t["workers_agree"] and t["bit_exact_with_model"] and t["switch_registers_match"]
    assert doc["rows"] == []  # no allreduce benchmark
    assert [p.name for p in tmp_path.glob("train-*.png")] == [doc_path.stem + "-train.png"]


def test_train_on_a_loopback_rail_only_network(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--backend", "loopback", "--topo", "rail-only", "--domains", "2",
                 "--gpus-per-domain", "2", "--steps", "10", "--out", str(tmp_path)]) == 0
    (doc_path,) = tmp_path.glob("rail-train-rail-only-*.json")
    doc = json.loads(doc_path.read_text())
    assert doc["training"]["steps"] == 10 and doc["training"]["bit_exact_with_model"]
    assert doc["rows"] == []
