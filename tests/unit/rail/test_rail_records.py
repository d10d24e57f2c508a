"""The rail testbed's parts without a network: faults asked of the backend, rows as the saved JSON has them."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from innet.testbed.core.machine import Machine
from innet.testbed.core.testbed import TestbedError, TestbedOptions
from innet.testbed.core.topology import rail_only
from innet.testbed.rail.records import (
    AllToAllSlowdown,
    Amdahl,
    BenchFailure,
    CollectiveRow,
    DemoRow,
    FailoverBench,
    FailoverRow,
    FailoverTimes,
    NotApplicable,
    TrainingSummary,
)
from innet.testbed.rail.testbed import RailTestbed

MACHINE = Machine("h", "TestCPU", 2, "6.1", "Linux", "3.11.9", "0.5 0.4 0.3", None, None)


@pytest.mark.parametrize(("backend", "fault", "message"), [
    ("loopback", lambda tb: tb.set_nic_link("d1g2", up=False),
     "set the NIC link of d1g2: needs the Mininet backend, this is loopback (no links)"),
    ("mininet", lambda tb: tb.freeze_switch("r2"), "freeze switch r2: needs the loopback backend, this is mininet"),
    ("mininet", lambda tb: tb.thaw_switch("r2"), "thaw switch r2: needs the loopback backend, this is mininet"),
])
def test_a_fault_the_backend_cannot_emulate_is_refused_naming_it(backend: str, fault: object, message: str,
                                                                 tmp_path: Path) -> None:
    tb = RailTestbed(rail_only(domains=2, gpus_per_domain=2), TestbedOptions(state_dir=tmp_path), backend=backend)
    with pytest.raises(TestbedError) as caught:
        fault(tb)  # type: ignore[operator]
    assert str(caught.value) == message


def test_collective_row_json_has_the_saved_documents_keys_in_order() -> None:
    row = CollectiveRow("hierarchical INA", 1000, "elements", 0.02, 0.01, (0.03, 0.01, 0.02), True, None, "innet")
    assert list(row.to_json().items()) == [
        ("collective", "hierarchical INA"), ("size", 1000), ("unit", "elements"), ("median_s", 0.02),
        ("min_s", 0.01), ("times", [0.03, 0.01, 0.02]), ("ok", True), ("model_s", None), ("switch_impl", "innet")]


def test_slowdown_json_nests_amdahl_and_ends_with_the_switch() -> None:
    s = AllToAllSlowdown(50000, 0.1, 3, (0.05, 0.11), 0.15, 0.1, Amdahl(0.3, 0.03, 0.27, (0.022, 0.03)), "bmv2")
    doc = s.to_json()
    assert list(doc) == ["pair_bytes", "measured", "runs", "spread", "model", "seed_estimate", "amdahl", "switch_impl"]
    assert doc["spread"] == [0.05, 0.11] and doc["amdahl"] == {"a2a_share": 0.3, "total": 0.03,
                                                               "paper_a2a_share": 0.27, "paper_totals": [0.022, 0.03]}


def test_demo_rows_carry_a_model_column_only_when_modelled() -> None:
    assert DemoRow("hierarchical INA", 1000, 0.02, True).to_json() == {
        "collective": "hierarchical INA", "size": 1000, "median_s": 0.02, "ok": True}
    unshaped = DemoRow("all-to-all (two-step)", 50000, 0.1, True, None, modelled=True).to_json()
    assert unshaped == {"collective": "all-to-all (two-step)", "size": 50000, "median_s": 0.1, "ok": True,
                        "model_s": None}


def test_failover_row_is_the_times_then_exact() -> None:
    times = FailoverTimes(1, "warm", 1, 2, 26, 3, 2, 6, 0.01, 0.2, 0.05, 0.002, 0.3, 0.4, 0.1, 1.0, 0.05, 0.9)
    doc = FailoverRow(times, exact=True).to_json()
    assert list(doc)[:3] == ["rank", "spare", "failed_domain"] and list(doc)[-1] == "exact"
    assert doc["slowest_step_s"] == 0.9 and doc["exact"] is True


def _training(**changes: object) -> TrainingSummary:
    fields: dict[str, object] = dict(
        model="softmax regression, digits", mode="momentum", lr=0.5, beta=0.9, steps=5, gpus=4, parameters=704,
        seconds=1.5, shards={"r0": 6, "r1": 5}, accuracy=0.9, float_reference_accuracy=0.91, loss_first=2.3,
        loss_last=1.6, workers_agree=True, switch_registers_match=True, bit_exact_with_model=True)
    return TrainingSummary(**{**fields, **changes})  # type: ignore[arg-type]


def test_rail_bench_document_keeps_its_keys_order_and_nesting(tmp_path: Path) -> None:
    from innet.testbed.rail.bench import RailBench, RailBenchConfig, markdown

    config = RailBenchConfig(topo="rail-only", out_dir=tmp_path)
    two_step = CollectiveRow("all-to-all two-step", 1000, "bytes/pair", 0.02, 0.01, (0.02,), True, None, "innet")
    slowdown = AllToAllSlowdown(1000, 0.1, 1, (0.1, 0.1), 0.09, 0.08, Amdahl(0.3, 0.03, 0.27, (0.02, 0.03)), "innet")
    bench = RailBench(config, "rail-only 2x4", "loopback", "innet-switch", (("bmv2", "not installed"),),
                      MACHINE, 1e7, 1e8, False, (two_step,), (NotApplicable("flat INA", "no spine"),),
                      (slowdown,), (BenchFailure("gloo ring", "innet", "boom"),), True)
    doc = bench.to_json()
    assert list(doc) == ["kind", "config", "not_applicable", "topology", "backend", "switch", "switch_absent",
                         "machine", "c_s_bps", "c_f_bps", "shaped", "rows", "small_frames_first",
                         "alltoall_slowdown", "failures", "partial", "note"]
    assert doc["config"]["out_dir"] == str(tmp_path) and doc["config"]["topo"] == "rail-only"
    assert doc["switch_absent"] == {"bmv2": "not installed"} and doc["rows"] == [two_step.to_json()]
    assert doc["not_applicable"] == [{"collective": "flat INA", "reason": "no spine"}]
    assert doc["failures"] == [{"collective": "gloo ring", "switch_impl": "innet", "error": "boom"}]
    assert doc["note"].startswith("loopback: no link rates") and doc["small_frames_first"] is False
    saved = json.loads(json.dumps(doc))  # the renderers read the saved document
    assert AllToAllSlowdown.from_json(saved["alltoall_slowdown"][0]) == slowdown
    assert "measured 10.0%" in markdown(saved)


def test_rail_demo_result_and_partial_hold_the_documents_keys(tmp_path: Path) -> None:
    from innet.testbed.rail.demo import PartialRailDemo, RailDemoConfig, RailDemoResult

    config = RailDemoConfig(out_dir=tmp_path)
    row = DemoRow("hierarchical INA", 1000, 0.02, True)
    result = RailDemoResult("rail-only 2x4", "loopback", "innet", config, _training(), (row,))
    assert list(result.to_json()) == ["topology", "backend", "switch_impl", "config", "training", "rows"]
    assert list(result.to_json()["training"])[:2] == ["model", "mode"] and result.good
    assert not replace(result, rows=(replace(row, ok=False),)).good
    assert not replace(result, training=_training(accuracy=0.5)).good  # 3 points below float32 at most
    assert PartialRailDemo(config, "bring-up").to_json() == {
        "partial": True, "config": {**asdict(config), "out_dir": str(tmp_path)}, "stage": "bring-up"}
    assert list(PartialRailDemo(config, "collectives", _training(), file="x.json").to_json()) == [
        "partial", "config", "stage", "training"]  # the file it was written to is not in it


def test_failover_bench_document_and_its_verdict() -> None:
    times = FailoverTimes(1, "warm", 1, 2, 26, 3, 2, 6, 0.01, 0.2, 0.05, 0.002, 0.3, 0.4, 0.1, 1.0, 0.05, 0.9)
    bench = FailoverBench("rail-only 3x2", "loopback", 60, 8, True, (FailoverRow(times, True),), False, file="f.json")
    assert list(bench.to_json()) == ["topology", "backend", "steps", "window", "model_exact", "rows", "partial"]
    assert bench.good and not replace(bench, model_exact=None).good
    assert not replace(bench, rows=(FailoverRow(times, False),)).good
