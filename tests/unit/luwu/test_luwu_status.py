"""The optimizer node's status read into a record: the writer's document back unchanged,
fields for the readers, one error line naming the file for anything else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from innet.host.luwu.node import STATUS_FILE, write_status
from innet.testbed.luwu.status import NodeStatus, UnreadNodeStatus, load, render
from testkit.node_status import written_status


def test_the_written_status_reads_into_fields_and_back_unchanged(tmp_path: Path) -> None:
    doc = written_status(step=3, agent_stats={"retransmitted": 2, "probes": 1})
    write_status(tmp_path, doc)
    (status,) = load([tmp_path])
    assert (status.name, status.state, status.step, status.shard, status.nodes) == ("o1", "done", 3, (0, 5568),
                                                                                  ("o1", "o2"))
    assert status.adam.lr == 0.01 and status.agent_stats["retransmitted"] == 2 and status.error is None
    assert json.dumps(status.to_json(), indent=1) == (tmp_path / STATUS_FILE).read_text()


def test_a_node_before_its_first_operation_has_no_agent_stats() -> None:
    status = NodeStatus.from_json(written_status(state="running", step=0))
    assert status.agent_stats == {} and status.to_json()["agent_stats"] == {}


@pytest.mark.parametrize(("change", "words"), [
    ({"format": "innet-optimizer-node/2"}, "format 'innet-optimizer-node/2', expected 'innet-optimizer-node/1'"),
    ({"extra": 1}, "unknown key 'extra'"),
    ({"shard": [1]}, "shard [1], expected [start, stop]"),
    ({"adam": {"lr": -1.0}}, "adam lr=-1.0: must be finite and >= 0"),
])
def test_a_status_that_does_not_fit_is_one_error_naming_the_file(tmp_path: Path, change: dict, words: str) -> None:
    doc = {**written_status(), **change}
    write_status(tmp_path, doc)
    with pytest.raises(ValueError) as error:
        NodeStatus.read(tmp_path)
    assert str(error.value) == f"optimizer node status {tmp_path / STATUS_FILE}: {words}"


def test_a_missing_key_and_a_missing_file_are_named(tmp_path: Path) -> None:
    doc = written_status()
    del doc["rss_bytes"]
    with pytest.raises(ValueError, match="^optimizer node status: no key 'rss_bytes'$"):
        NodeStatus.from_json(doc)
    with pytest.raises(ValueError, match="no such file"):
        NodeStatus.read(tmp_path)


def test_the_table_shows_each_node_and_an_unread_one_saves_its_error() -> None:
    console = Console(record=True, width=200)
    render([NodeStatus.from_json(written_status(state="failed", error="worker h2 gone"))], console)
    text = console.export_text()
    assert "failed: worker h2 gone" in text and "0..5567 (5568)" in text and "lr 0.01" in text
    assert UnreadNodeStatus("no such file").to_json() == {"error": "no such file"}
