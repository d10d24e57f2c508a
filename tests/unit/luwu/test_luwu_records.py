"""innet.testbed.luwu.records: bench luwu's and bench luwu-node's typed rows give the JSON the
saved documents and the plots read, key for key and in the documents' order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from innet.testbed.core.machine import Machine
from innet.testbed.luwu.bench import plot
from innet.testbed.luwu.records import (
    HookSplit,
    LinkBytes,
    LuwuBench,
    LuwuBenchSettings,
    LuwuOverlap,
    ModeRow,
    NodeBenchRow,
    NodeRun,
    StepMeasures,
    ModeContext,
    TorchRun,
)
from innet.testbed.luwu.status import UnreadNodeStatus

MACHINE = Machine("h", "TestCPU", 2, "6.1", "Linux", "3.11.9", "0.5 0.4 0.3", None, None)

MEASURES = StepMeasures(params=1000, step_ms=200.0, step_ms_p90=250.0, timed_steps=8, bytes_per_worker_step=5e4,
                        bytes_source="agent frames", worker_rss_mb=300.0, worker_rss_peak_mb=310.0,
                        worker_tensor_bytes_peak=4000, accuracy=0.9)
MEASURE_KEYS = ["params", "step_ms", "step_ms_p90", "timed_steps", "bytes_per_worker_step", "bytes_source",
                "worker_rss_mb", "worker_rss_peak_mb", "worker_tensor_bytes_peak", "accuracy"]
ON_TESTBED = ModeContext(wire_bytes_per_worker_step=None, switch_cpu_s_per_step=0.04, load_average=("1.0", "1.2"))
NODE = tuple((key, None) for key in ("rss_bytes", "bytes_on_disk", "bytes_state", "bytes_working_set", "step",
                                     "seconds"))


def test_a_failed_mode_is_its_name_errors_and_why() -> None:
    row = ModeRow("luwu", 2, {"train-h2": "OptimizerNodeError"}, 3.5, failed="1 of 2 workers finished")
    assert row.to_json() == {"mode": "luwu", "workers": 2, "errors": {"train-h2": "OptimizerNodeError"},
                             "seconds": 3.5, "failed": "1 of 2 workers finished"}
    assert row.step_ms is None


def test_an_overlapped_luwu_row_has_every_part_in_the_documents_order() -> None:
    luwu = LuwuOverlap(0, 100.0, 50.0, 150.0, NODE)
    row = ModeRow("luwu", 2, {}, 9.0, measures=MEASURES, cpu_s_per_step=(0.5, 0.25), link=LinkBytes(500.0, 700.0),
                  luwu=luwu, testbed=ON_TESTBED)
    doc = row.to_json()
    assert list(doc) == ["mode", "workers", "errors", "seconds", *MEASURE_KEYS, "cpu_s_per_step",
                         "link_up_bytes_per_step", "link_down_bytes_per_step", "worker_tensor_bytes_between_steps",
                         "comm_busy_ms_per_step", "comm_wait_ms_per_step", "compute_ms_per_step", "node",
                         "wire_bytes_per_worker_step", "load_average"]
    assert doc["cpu_s_per_step"] == {"trainers": 0.5, "agents": 0.25, "switch (whole run)": 0.04}
    assert doc["node"] == dict(NODE) and doc["load_average"] == ["1.0", "1.2"]
    serialized = ModeRow("luwu (serialized)", 2, {}, 9.0, measures=MEASURES,
                         luwu=LuwuOverlap(0, 100.0, None, None, NODE)).to_json()
    assert "comm_wait_ms_per_step" not in serialized and "compute_ms_per_step" not in serialized


def test_switch_cpu_alone_comes_after_the_wire_bytes_and_the_hook_is_nested() -> None:
    row = ModeRow("ddp-innet", 2, {}, 4.0, measures=MEASURES, hook=HookSplit(3.0, 0.1, 0.02, 0.05),
                  testbed=ON_TESTBED)
    doc = row.to_json()
    assert list(doc)[-5:] == ["accuracy", "hook", "wire_bytes_per_worker_step", "cpu_s_per_step", "load_average"]
    assert doc["hook"] == {"buckets": 3.0, "seconds": 0.1, "stage_seconds": 0.02, "agent_seconds": 0.05}
    assert doc["cpu_s_per_step"] == {"switch (whole run)": 0.04}
    unmeasured = ModeRow("ddp-gloo", 2, {}, 4.0, measures=MEASURES,
                         testbed=ModeContext(None, None, ("1.0", "1.0"))).to_json()
    assert "cpu_s_per_step" not in unmeasured


def test_the_bench_document_is_what_the_plot_reads(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib (the plot extra) is not installed")
    settings = LuwuBenchSettings(steps=8, warmup=2, batch=32, model="MLP 64-128-64-10", params=1000, k=64,
                                 window=64, mtu=1500, nodes=1, lr=0.01)
    rows = (ModeRow("luwu", 2, {}, 9.0, measures=MEASURES), ModeRow("ddp-gloo", 2, {}, 1.0, failed="0 of 2"))
    bench = LuwuBench("2026-11-28T17:00:00", MACHINE, "loopback", "s", "1.0", "1.1", settings,
                      rows, {2: {"overlap_speedup": 1.5}}, partial=False)
    doc = bench.to_json()
    assert list(doc) == ["format", "date", "machine", "backend", "switch", "load_average_start", "load_average_end",
                         "settings", "rows", "summary", "partial"]
    assert doc["format"] == "innet-bench-luwu/3" and doc["settings"]["model"] == "MLP 64-128-64-10"
    assert json.loads(json.dumps(doc))["summary"] == {"2": {"overlap_speedup": 1.5}}
    assert "files" not in doc
    assert plot(doc, tmp_path / "b.png") is not None


def test_a_node_bench_row_nests_setup_node_and_torch() -> None:
    node = NodeRun(0.1, [0.2, 0.2], [0.05, 0.05], True, 40 << 20, 1 << 20)
    torch = TorchRun([0.1, 0.1], 2, "2.0", 300 << 20)
    doc = NodeBenchRow("adam", 1000, 0.3, node, torch, 5e3, 4e3, 1e4, 0.5, 0.4, 24000).to_json()
    assert list(doc) == ["optimizer", "params", "setup", "node", "torch", "node_params_per_s",
                         "node_with_commit_params_per_s", "torch_params_per_s", "ratio", "ratio_with_commit",
                         "state_bytes"]
    assert doc["setup"] == {"create_seconds": 0.3}
    assert list(doc["node"]) == ["open_seconds", "update_seconds", "commit_seconds", "native", "peak_rss_bytes",
                                 "working_set_bytes"]
    assert NodeRun(**doc["node"]) == node and TorchRun(**doc["torch"]) == torch  # what the child processes print


def test_a_trainers_final_report_has_the_keys_the_rows_read_in_the_order_it_always_printed() -> None:
    from innet.testbed.luwu.records import CpuPerStep, HookComm, LinkCount, LuwuComm, StepReport, TrainerFinal

    head = ["final", "mode", "rank", "accuracy", "rss_bytes", "rss_peak_bytes", "step_seconds", "params"]
    link = LinkCount(10, 5000, 7000, 5, 7)
    bare = TrainerFinal("allreduce-innet", 0, float("nan"), 1, 2, [0.1], 1000, 4000, link=link,
                        cpu_per_step=CpuPerStep(0.5, 0.1), agent_stats={"sent": 3}).to_json()
    assert list(bare) == [*head, "tensor_bytes_peak", "link", "cpu_per_step", "agent_stats"]
    assert bare["link"] == {"steps": 10, "sent_bytes": 5000, "received_bytes": 7000, "sent_packets": 5,
                            "received_packets": 7}
    luwu = TrainerFinal("luwu", 1, 0.9, 1, 2, [0.1], 1000, 4000, cpu_per_step=CpuPerStep(0.5, 0.1),
                        tensor_bytes_between_steps=0, comm=LuwuComm(0.5, 0.5, 0.1, 0), step_wait_seconds=[0.05],
                        agent_stats={"sent": 3}).to_json()
    assert list(luwu) == [*head, "cpu_per_step", "tensor_bytes_peak", "tensor_bytes_between_steps", "comm",
                          "step_wait_seconds", "agent_stats"]
    assert list(luwu["comm"]) == ["push_seconds", "pull_seconds", "wait_seconds", "saturated"]
    hook = TrainerFinal("ddp-innet", 0, 0.9, 1, 2, [0.1], 1000, 4000, comm=HookComm(3, 0.1, 0, 0.02, 0.05),
                        agent_stats={}).to_json()
    assert list(hook)[-3:] == ["tensor_bytes_peak", "comm", "agent_stats"]
    assert StepReport(0, 2.3, 0.1).to_json() == {"step": 0, "loss": 2.3, "seconds": 0.1}
    assert StepReport(1, 2.0, 0.1, 0.02).to_json()["wait_seconds"] == 0.02


def test_the_luwu_demo_document_and_its_partial_form_keep_their_keys() -> None:
    from innet.testbed.luwu.records import DemoCurves, LuwuDemoResult, PartialLuwuDemo

    result = LuwuDemoResult("2026-11-28T17:00:00", MACHINE, "loopback", "innet-switch", 256, 3.0, (0.2, None),
                            {"steps": "40"}, DemoCurves(0.9, 0.89, None), DemoCurves([2.0], [2.1], [2.2]), (UnreadNodeStatus("gone"),), {})
    doc = result.to_json()
    assert list(doc) == ["format", "date", "machine", "backend", "switch", "k", "bring_up_seconds",
                         "median_step_seconds", "settings", "accuracy", "loss", "nodes", "errors"]
    assert doc["median_step_seconds"] == {"luwu": 0.2, "ddp-innet": None}
    assert doc["accuracy"] == {"local": 0.9, "luwu": 0.89, "ddp-innet": None}  # what the CLI's exit status reads
    partial = PartialLuwuDemo({"steps": "40"}, "luwu", {"local": [2.0]}, "out/demo-luwu-x-partial.json").to_json()
    assert list(partial) == ["format", "partial", "settings", "stage", "loss", "file"]
    assert partial["format"] == "innet-demo-luwu/1" and partial["partial"] is True


LOCAL_FINAL_LINE = ('{"final": true, "mode": "local", "rank": 0, "accuracy": 0.15367482602596283, "rss_bytes": 318959616, '
                    '"rss_peak_bytes": 318959616, "step_seconds": [0.002914950004196726, 0.0005563499944400974, '
                    '0.0007314520044019446], "params": 17226, "cpu_per_step": {"trainer": 0.0007705000000000073, '
                    '"agent": 0.0}, "tensor_bytes_peak": 275640}')
"""The last line ``python -m innet.testbed.luwu.train '{"mode": "local", "steps": 3}'`` printed."""


def test_a_trainers_final_line_reads_back_into_the_record_it_was_printed_from() -> None:
    from innet.testbed.luwu.records import CpuPerStep, HookComm, LinkCount, LuwuComm, TrainerFinal

    printed = [
        TrainerFinal("allreduce-innet", 0, 0.5, 1, 2, [0.1], 1000, 4000, link=LinkCount(10, 5000, 7000, 5, 7),
                     cpu_per_step=CpuPerStep(0.5, 0.1), agent_stats={"sent": 3}),
        TrainerFinal("luwu", 1, 0.9, 1, 2, [0.1, 0.2], 1000, 4000, cpu_per_step=CpuPerStep(0.5, 0.1),
                     tensor_bytes_between_steps=0, comm=LuwuComm(0.5, 0.5, 0.1, 0), step_wait_seconds=[0.05],
                     agent_stats={"sent": 3}, pull_agent_stats={"results": 4}),
        TrainerFinal("ddp-innet", 0, 0.9, 1, 2, [0.1], 1000, 4000, comm=HookComm(3, 0.1, 0, 0.02, 0.05),
                     agent_stats={}),
    ]
    for final in printed:
        line = json.loads(json.dumps(final.to_json()))
        assert TrainerFinal.from_json(line) == final
        assert list(TrainerFinal.from_json(line).to_json()) == list(line)
    local = json.loads(LOCAL_FINAL_LINE)
    assert json.dumps(TrainerFinal.from_json(local).to_json()) == LOCAL_FINAL_LINE  # keys, order and values
    older = TrainerFinal.from_json({k: v for k, v in local.items() if k != "rss_peak_bytes"})
    assert older.rss_peak_bytes == local["rss_bytes"]


def test_a_final_line_without_its_accuracy_is_one_error_naming_the_key() -> None:
    from innet.testbed.luwu.records import TrainerFinal

    with pytest.raises(ValueError, match=r"^trainer final report: KeyError 'accuracy' in \{"):
        TrainerFinal.from_json({k: v for k, v in json.loads(LOCAL_FINAL_LINE).items() if k != "accuracy"})


def test_the_luwu_demo_is_good_when_nothing_failed_and_luwu_learns_like_local_adam() -> None:
    from dataclasses import replace

    from innet.testbed.luwu.records import DemoCurves, LuwuDemoResult

    result = LuwuDemoResult("2026-11-28T17:00:00", MACHINE, "loopback", "innet-switch", 256, 3.0, (0.2, 0.1),
                            {"steps": "40"}, DemoCurves(0.9, 0.895, 0.9), DemoCurves([2.0], [2.1], [2.2]), (UnreadNodeStatus("gone"),), {})
    assert result.good
    assert not replace(result, accuracy=DemoCurves(0.9, 0.85, 0.9)).good
    assert not replace(result, accuracy=DemoCurves(0.9, None, 0.9)).good
    assert not replace(result, errors={"node-o1": "killed"}).good
