"""``innet inspect --optimizer DIR`` shows optimizer nodes' state; a wrong DIR is one error line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from innet.cli import main
from innet.host.luwu.plan import LuwuPlan
from innet.host.luwu.ooc_adam import AdamConfig
from innet.host.luwu.node import NodeConfig, OptimizerNode, write_status
from innet.host.agent.transport import UdpTransportConfig


def test_inspect_optimizer_shows_the_node_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = LuwuPlan(job=1, num_workers=2, nodes=("o1", "o2"), layer_sizes=(100, 60), epoch=1, k=16)
    np.save(tmp_path / "init.npy", np.zeros(160, np.float32))
    node = OptimizerNode(NodeConfig(plan, 1, str(tmp_path / "o2"), {}, 1, AdamConfig(lr=0.5),
                                    str(tmp_path / "init.npy")), UdpTransportConfig("127.0.0.1", 9, "127.0.0.1"))
    write_status(node.directory, node.status("running"))
    assert main(["inspect", "--optimizer", str(tmp_path / "o2"), "--json"]) == 0
    (status,) = json.loads(capsys.readouterr().out)
    assert status["name"] == "o2" and status["shard"] == [80, 160] and status["step"] == 0
    assert status["bytes_state"] == 3 * 4 * 80 and status["adam"]["lr"] == 0.5
    assert main(["inspect", "--optimizer", str(tmp_path / "o2")]) == 0
    assert "o2" in capsys.readouterr().out


def test_inspect_optimizer_without_status_is_one_error_line(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--optimizer", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "status.json: no such file" in err
