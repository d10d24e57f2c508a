"""innet.controller.inspect: report contents, JSON, rich rendering, range parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from innet.controller.errors import JobError, ValueRangeError
from innet.controller.innet_switch import InnetSwitch
from innet.controller.inspect import inspect_switch, parse_range, render
from innet.controller.jobs import JobSpec, WorkerSpec
from innet.controller.pipeline import PipelineConfig
from innet.controller.switch import Switch, SwitchEndpoint
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.server import SwitchOptions, SwitchServer

ROOT = Path(__file__).parents[2]
SIZES = {"INNET_K": "4", "INNET_SLOTS": "8", "INNET_PARAM_CHUNKS": "8", "INNET_MAX_JOBS": "4"}


@pytest.fixture
def server():
    with SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), InnetTarget()) as s:
        yield s


def test_parse_range():
    assert parse_range("0:16") == range(0, 16)
    assert parse_range("5") == range(5, 6)
    assert parse_range(":3") == range(0, 3)
    assert parse_range("4:", size=10) == range(4, 10)
    with pytest.raises(ValueRangeError, match="range 'a:b': expected A:B"):
        parse_range("a:b")


def test_report_of_innet_switch(server):
    with Switch(SwitchEndpoint("s", server.grpc_address)) as sw:
        sw.push(PipelineConfig.from_p4(ROOT / "p4" / "innet.p4", SIZES))
        node = InnetSwitch(sw)
        ws = tuple(WorkerSpec(r, r + 1, f"00:00:00:00:00:0{r + 1}", f"10.0.0.{r + 1}", 7000) for r in range(3))
        node.create_job(JobSpec(2, ws, slot_base=1, slot_count=2, k=4))
        sw.write_registers({"innet_count": [(2, 3), (3, 1)], "innet_bitmap": [(2, 7), (3, 2)],
                            "innet_param_1": [(0, 11)]})
        sw.reset_counters([])  # no-op batch
        with Switch(SwitchEndpoint("ro", server.grpc_address, election_id=None)) as ro:
            report = inspect_switch(ro, [("innet_param_1", "0:3"), ("innet_count", None)])
            with pytest.raises(JobError, match=r"no job 3 \(innet_jobs has \[2\]\)"):
                inspect_switch(ro, job_id=3)
    assert [j.job_id for j in report.jobs] == [2] and report.jobs[0].mode == "sum"
    (occ,) = report.occupancy
    assert (occ.copies, occ.idle, occ.busy, occ.complete, occ.contributors) == (4, 2, 1, 1, (3, 1, 0, 0))
    assert report.counters["innet_contributions"] == {2: 0}
    doc = json.loads(json.dumps(report.to_json()))
    assert doc["layout"] == {"k": 4, "slots": 8, "param_chunks": 8, "max_jobs": 4}
    assert doc["registers"][0] == {"name": "MyIngress.innet_param_1", "start": 0, "values": [11, 0, 0]}
    assert doc["registers"][1]["values"][2:4] == [3, 1] and len(doc["registers"][1]["values"]) == 16
    assert doc["occupancy"] == [{"job_id": 2, "copies": 4, "idle": 2, "busy": 1, "complete": 1}]
    console = Console(record=True, width=120)
    render(report, console)
    text = console.export_text()
    assert "innet.p4 K=4, 8 slots" in text and "MyIngress.innet_param_1" in text and "[0:3]" in text
    assert "slot copies" in text and "contributions" in text


def test_report_of_another_program_has_registers_only(server):
    with Switch(SwitchEndpoint("s", server.grpc_address)) as sw:
        sw.push(PipelineConfig.from_p4(ROOT / "tests" / "integration" / "clients" / "innet_pio.p4"))
        report = inspect_switch(sw, [("seen", "1:3")])
    assert report.layout is None and report.jobs == ()
    assert report.to_json()["registers"] == [{"name": "MyIngress.seen", "start": 1, "values": [0, 0]}]
    console = Console(record=True, width=100)
    render(report, console)
    assert "pipeline is not innet.p4" in console.export_text()
