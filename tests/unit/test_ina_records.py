"""innet.testbed.ina.records: the typed rows of bench, demo and soak give the JSON the saved
documents, the renderers and the CLI read, key for key."""

from __future__ import annotations

import json
from pathlib import Path

from innet.testbed.core.machine import Machine
from innet.testbed.ina import bench
from innet.testbed.ina.records import (
    AllreduceBench,
    AllreduceFailure,
    DemoResult,
    PartialDemo,
    PartialTraining,
    Round,
    Row,
    RunInfo,
    SoakResult,
    SoakSummary,
    TrainingResult,
)
from innet.testbed.ina.soak import SoakConfig

ROW_KEYS = ["collective", "workers", "elements", "loss_pct", "ok", "time_mean_s", "time_max_s", "goodput_gbps",
            "switch_pps", "wire_up", "wire_down", "wire_source", "theory_time_s", "theory_payload", "theory_wire",
            "retransmitted", "switch_impl"]
"""A ``bench-*.json`` row's keys, in the order the saved documents have them."""

RENDERED_ROW_KEYS = {"collective", "switch_impl", "workers", "elements", "loss_pct", "time_max_s", "theory_time_s",
                     "goodput_gbps", "switch_pps", "wire_up", "theory_wire", "wire_down", "retransmitted", "ok"}
"""What the table columns and the plot read of a row."""

MACHINE = Machine("h", "TestCPU", 2, "6.1", "Linux", "3.11.9", "0.5 0.4 0.3", None, None)


def _row(collective: str = "ina", retransmitted: float | None = 0.0) -> Row:
    return Row(collective, 2, 1024, 0.0, True, 0.009, 0.01, 0.003, 20000.0, 5088.0, 5088.0, "h1-eth0", 0.008,
               4096, 5000.0, retransmitted)


def _info(config: bench.BenchConfig) -> RunInfo:
    return RunInfo("2026-11-28T17:00:00", MACHINE, "mininet", "innet-switch (python executor)", config)


def test_row_json_has_the_saved_keys_in_order_and_what_the_renderers_read() -> None:
    doc = _row().to_json()
    assert list(doc) == ROW_KEYS
    assert RENDERED_ROW_KEYS <= set(doc)
    assert doc["switch_impl"] == "innet" and doc["retransmitted"] == 0.0


def test_bench_document_has_the_format_head_rows_failures_and_renders() -> None:
    config = bench.BenchConfig(workers=(2,), sizes=(1024,), switch_impls=("innet", "bmv2"), out_dir=Path("out"))
    failure = AllreduceFailure("gloo", 2, 0.0, "bmv2", "gloo timed out")
    doc = AllreduceBench(_info(config), (_row(), _row("gloo", None)), (failure,),
                         (("bmv2", "simple_switch_grpc not found"),)).to_json()
    assert list(doc) == ["format", "date", "machine", "backend", "switch", "settings", "rows", "failures",
                         "switch_absent", "partial"]
    assert doc["format"] == "innet-bench/1" and doc["partial"] is False
    assert doc["settings"]["out_dir"] == "out" and (doc["settings"]["k"], doc["settings"]["mtu"]) == (256, 1500)
    assert doc["failures"] == [{"collective": "gloo", "workers": 2, "loss_pct": 0.0, "switch_impl": "bmv2",
                                "error": "gloo timed out"}]
    assert doc["switch_absent"] == {"bmv2": "simple_switch_grpc not found"}
    assert json.loads(json.dumps(doc))["settings"]["switch_impls"] == ["innet", "bmv2"]
    lines = bench.markdown_table(doc).splitlines()
    assert lines[2].startswith("| ina | innet | 2 | 1K | 0% | 10.0 |") and lines[3].endswith("| - | yes |")
    assert lines[-1] == "no bmv2 rows: simple_switch_grpc not found"


def test_settings_are_every_config_field_with_k_and_mtu_resolved() -> None:
    config = bench.BenchConfig(mtu=9000, out_dir=Path("results/x"))
    settings = config.settings_json()
    assert (settings["k"], settings["mtu"], settings["out_dir"]) == (2048, 9000, "results/x")
    assert set(settings) == set(bench.BenchConfig.__dataclass_fields__)


def _training() -> TrainingResult:
    return TrainingResult(steps=3, workers=2, mode="momentum", lr=0.5, seconds=1.5, steps_per_s=2.0, accuracy=0.9,
                          float_reference_accuracy=0.91, workers_agree=True, switch_registers_match=True,
                          bit_exact_with_model=True, loss_curve=(2.0, 1.5, 1.0), float_reference_loss=(2.0, 1.4, 0.9))


def test_demo_document_nests_training_and_adds_files_only_once_written() -> None:
    config = bench.BenchConfig(workers=(2,), sizes=(1024,))
    result = DemoResult(_info(config), _training(), (_row(),), 12.5)
    written = result.to_json()
    assert list(written) == ["format", "date", "machine", "backend", "switch", "settings", "training", "rows",
                             "seconds"]
    assert written["format"] == "innet-demo/1" and written["rows"] == [_row().to_json()]
    assert list(written["training"]) == ["steps", "workers", "mode", "lr", "seconds", "steps_per_s", "accuracy",
                                         "float_reference_accuracy", "workers_agree", "switch_registers_match",
                                         "bit_exact_with_model", "loss_curve", "float_reference_loss"]
    assert written["training"]["loss_curve"] == [2.0, 1.5, 1.0]
    returned = DemoResult(_info(config), _training(), (), 12.5, files=("demo.json", "demo-train.png")).to_json()
    assert returned["files"] == ["demo.json", "demo-train.png"] and returned["rows"] == []


def test_a_demo_is_good_when_training_checks_out_and_every_row_is_exact() -> None:
    from dataclasses import replace

    config = bench.BenchConfig(workers=(2,), sizes=(1024,))
    result = DemoResult(_info(config), _training(), (_row(), _row("gloo", None)), 12.5)
    assert result.good
    assert not replace(result, rows=(replace(_row(), ok=False),)).good
    assert not replace(result, training=replace(_training(), switch_registers_match=False)).good
    assert not replace(result, training=replace(_training(), bit_exact_with_model=False)).good


def test_interrupted_demo_is_partial_with_the_steps_each_worker_did() -> None:
    training = PartialTraining(steps=150, workers=2, mode="sgd", lr=0.5, steps_done_per_worker=(40, 38),
                               loss_curve=(2.0, 1.9))
    doc = PartialDemo("2026-11-28T17:00:00", MACHINE, "loopback", training, 3.0, files=("x-partial.json",)).to_json()
    assert list(doc) == ["format", "date", "partial", "machine", "backend", "training", "rows", "seconds", "files"]
    assert doc["partial"] is True and doc["rows"] == [] and doc["files"] == ["x-partial.json"]
    assert doc["training"]["steps_done_per_worker"] == [40, 38]


def test_soak_summary_adds_the_rounds_up() -> None:
    rounds = (Round(0, 0.0, 2.0, "run", 4, True, 3, 9000, {"innet_contributions": 8}),
              Round(1, 2.0, 3.0, "restart", 4, False, 5, 9100, note="rank 1 exited 0"),
              Round(2, 5.0, 1.0, "run", 0, True, 0, None))
    assert SoakSummary.of(rounds) == SoakSummary(rounds=3, restarts=1, operations=8, inexact_rounds=(1,),
                                                 retransmitted=8, switch_rss_kb_first_last_max=(9000, 9100, 9100),
                                                 seconds=6.0)
    config = SoakConfig(minutes=1, workers=2, out=Path("soak-out"))
    doc = SoakResult(config, rounds, partial=False).to_json()
    assert list(doc) == ["config", "rounds", "summary", "partial"]
    assert doc["config"]["out"] == "soak-out" and doc["config"]["sizes"] == (1000, 20000)
    assert list(doc["rounds"][0]) == ["index", "start_s", "seconds", "kind", "operations", "exact", "retransmitted",
                                      "switch_rss_kb", "counters", "note"]
    assert doc["summary"]["switch_rss_kb_first_last_max"] == [9000, 9100, 9100]
    assert doc["summary"]["inexact_rounds"] == [1]
    assert SoakSummary.of(()).to_json()["switch_rss_kb_first_last_max"] is None


def test_a_compose_workers_report_has_the_keys_the_cluster_rows_read() -> None:
    from innet.testbed.ina.records import TrainReport, WorkerReport

    train = TrainReport(steps=20, sha256="ab", bit_exact=True, accuracy=0.91, seconds=1.5)
    report = WorkerReport(0, "w1", 1000, 64, True, "cd", (0, 2, 4, 6), 0.05, 1, train)
    doc = report.to_json()
    assert list(doc) == ["rank", "host", "elements", "k", "ok", "sha256", "head", "seconds", "epoch", "train"]
    assert doc["head"] == [0, 2, 4, 6] and doc["train"] == {"steps": 20, "sha256": "ab", "bit_exact": True,
                                                            "accuracy": 0.91, "seconds": 1.5}
    assert report.good and WorkerReport(0, "w1", 1000, 64, True, "cd", (), 0.05, 1, None).to_json()["train"] is None
    assert not WorkerReport(0, "w1", 1000, 64, True, "cd", (), 0.05, 1,
                            TrainReport(20, "ab", False, 0.5, 1.0)).good


def test_the_machine_record_writes_the_keys_every_document_had() -> None:
    """Renderers and saved documents read ``machine`` by these keys, in this order."""
    from innet.testbed.core.machine import describe

    assert list(describe().to_json()) == ["host", "cpu", "cores", "kernel", "platform", "python", "load_average",
                                          "torch", "commit"]
    assert MACHINE.to_json() == {"host": "h", "cpu": "TestCPU", "cores": 2, "kernel": "6.1", "platform": "Linux",
                                 "python": "3.11.9", "load_average": "0.5 0.4 0.3", "torch": None, "commit": None}
