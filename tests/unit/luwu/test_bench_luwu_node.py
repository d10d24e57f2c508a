"""The optimizer-node benchmark script runs end to end on a small shard (not a timing test:
its numbers are only checked for being there and consistent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from innet.cli import main as innet

pytest.importorskip("torch", reason="torch (the benchmark's reference) is not installed")


@pytest.mark.slow
def test_small_run_writes_its_table_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = innet(["bench", "luwu-node", "--params", "30000", "--steps", "1", "--pieces", "3", "--block", "4096",
                  "--optimizers", "adamw", "--dir", str(tmp_path), "--out", str(tmp_path / "out")])
    assert code == 0
    assert "adamw" in capsys.readouterr().out
    doc = json.loads((tmp_path / "out" / "bench_luwu_node.json").read_text())
    (row,) = doc["rows"]
    assert row["optimizer"] == "adamw" and row["params"] == 30000 and row["node"]["native"]
    assert len(row["node"]["update_seconds"]) == 1 and row["node_params_per_s"] > 0 and row["torch_params_per_s"] > 0
    assert row["node"]["peak_rss_bytes"] < doc["rss_budget_bytes"] and not doc["over_budget"]
    assert not any(tmp_path.glob("innet-bench-node-*"))  # the state files are removed


def test_bad_arguments_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert innet(["bench", "luwu-node", "--optimizers", "sgd"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("innet bench luwu-node: --optimizers must be adam and/or adamw (got sgd)")
