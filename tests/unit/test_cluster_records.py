"""innet.testbed.cluster.records: ``innet bench cluster``'s typed rows give the JSON its saved
documents have (every row kind's keys in their order, the deployment block), and the table and
plot render that JSON, without a swarm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from innet.testbed.core.machine import Machine
from innet.testbed.cluster import bench
from innet.testbed.cluster.records import (ClusterBench, ClusterSide, Deployment, StarAllreduceRow, StarFailure,
                                           StarTrainingRow)
from innet.testbed.luwu.records import LinkBytes, ModeRow, StepMeasures

MACHINE = Machine("h", "TestCPU", 2, "6.1", "Linux", "3.11.9", "0.5 0.4 0.3", None, None)

CLUSTER_ALLREDUCE_KEYS = ["where", "workload", "workers", "elements", "k", "ok", "step_s", "step_s_min", "wire_up_bytes",
                          "wire_down_bytes", "underlay_up_bytes", "tx_packets", "nodes", "first_step_s"]
STAR_ALLREDUCE_KEYS = ["where", "workload", "workers", "elements", "ok", "step_s", "wire_up_bytes", "wire_down_bytes"]
STAR_TRAINING_KEYS = ["where", "workload", "workers", "ok", "step_s", "step_s_p90", "wire_up_bytes", "wire_down_bytes",
                      "accuracy"]
DOCUMENT_KEYS = ["format", "date", "machine", "settings", "deployment", "rows", "files", "not_measured", "partial",
                 "caveat"]


def _timed(rank: int, times: list[float], node: str) -> dict[str, object]:
    """A worker task's timed result line (``innet.testbed.cluster.timed``)."""
    return {"rank": rank, "host": f"task{rank}", "node": node, "elements": 2048, "k": 256, "ok": True,
            "times": times, "first_done_unix": 100.0 + rank, "train": None,
            "wire_per_op": {"tx_bytes": 9000.0, "rx_bytes": 9100.0, "tx_packets": 9.0, "rx_packets": 9.0}}


def _bench() -> ClusterBench:
    ina = bench.cluster_row(2, [_timed(0, [1.0, 0.02, 0.04], "innet-n2"), _timed(1, [1.0, 0.03, 0.01], "innet-n3")],
                            deploy_unix=90.0)
    measures = StepMeasures(1000, 200.0, 250.0, 8, 5e4, "theory", 300.0, 310.0, 4000, 0.9)
    star_training = StarTrainingRow.of(ModeRow("luwu (one job)", 2, {}, 3.0, measures=measures,
                                               link=LinkBytes(6000.0, 7000.0)))
    failed = StarTrainingRow.of(ModeRow("ddp-gloo", 2, {"train-h2": "killed"}, 3.0, failed="1 of 2 workers finished"))
    side = ClusterSide("reg:5000/innet-torch", 1.5, 2.5,
                       (Deployment(2, "ina", ina.first_step_s, 3.0, 9.0, 4.0),), lab_up_s=30.0)
    return ClusterBench("2026-11-29T01:00:00", MACHINE, {"workers": [2]}, side,
                        (ina, StarAllreduceRow("ina", 2, 2048, True, 0.05, 9000.0, 9100.0),
                         StarFailure("gloo", 2, "gloo: timed out"), star_training, failed),
                        ("results/bench_cluster_star.json",), {}, False)


def test_an_allreduce_row_is_the_slowest_rank_per_operation_after_the_first() -> None:
    row = _bench().rows[0].to_json()
    assert list(row) == CLUSTER_ALLREDUCE_KEYS
    assert row["step_s"] == pytest.approx(0.035) and row["step_s_min"] == pytest.approx(0.03)
    assert row["underlay_up_bytes"] == pytest.approx(9000.0 + 50 * 9.0)
    assert row["nodes"] == ["innet-n2", "innet-n3"] and row["first_step_s"] == pytest.approx(10.0)


def test_every_row_kind_and_the_document_keep_their_keys_in_order() -> None:
    result = _bench()
    doc = json.loads(json.dumps(result.to_json()))
    assert list(doc) == DOCUMENT_KEYS
    assert list(doc["deployment"]) == ["image", "build_check_s", "push_s", "deployments", "lab_up_s"]
    assert list(doc["deployment"]["deployments"][0]) == ["workers", "workload", "first_step_s", "stack_deploy_s",
                                                         "all_results_s", "stack_rm_s"]
    rows = doc["rows"]
    assert list(rows[1]) == STAR_ALLREDUCE_KEYS
    assert rows[2] == {"where": "mininet", "workload": "gloo", "workers": 2, "ok": False, "error": "gloo: timed out"}
    assert list(rows[3]) == STAR_TRAINING_KEYS and rows[3]["step_s"] == pytest.approx(0.2)
    assert rows[3]["wire_up_bytes"] == 6000.0 and rows[3]["accuracy"] == 0.9
    assert rows[4]["ok"] is False and rows[4]["step_s"] is None and rows[4]["accuracy"] is None
    assert not result.ok  # a failed row fails the run


def test_the_table_and_the_plot_render_the_saved_document(tmp_path: Path) -> None:
    doc = _bench().to_json()
    saved = bench.save(doc, tmp_path)
    again = json.loads(saved.read_text())
    text = bench.table(again)
    assert "luwu (one job)" in text and "gloo: timed out" in text and "push 2.5 s" in text
    pytest.importorskip("matplotlib", reason="matplotlib (the plot extra) is not installed")
    png = bench.plot(again, tmp_path / "b.png")
    assert png is not None and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
