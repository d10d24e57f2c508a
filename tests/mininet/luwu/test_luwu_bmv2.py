"""Real-BMv2 tier: LuWu on simple_switch_grpc in Mininet (``switch_impl="bmv2"``). Workers
``h1``/``h2`` send REDUCE, the optimizer node ``h3`` owns every chunk (``innet_owners`` and its
multicast group programmed over BMv2's P4Runtime) and BCASTs the parameters. Checked as the
innet-switch LuWu tests check it (loss curve and accuracy against the local torch Adam run,
the node's traffic on its link), and bit for bit against the same run on innet-switch: the
losses every rank saw and the node's parameters and Adam moments. Skipped, naming the missing
binary, when BMv2 is not installed (``INNET_P4_PREFIX=/nonexistent`` makes it so here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch (optional dependency) is not installed")

from innet.wire import ETH, IP_OVERHEAD, message_len  # noqa: E402
from innet.testbed.backends.bmv2 import LUWU_K  # noqa: E402
from innet.testbed.backends.mininet.clean import innet_interfaces  # noqa: E402
from innet.testbed.backends.select import open_testbed  # noqa: E402
from innet.testbed.core.testbed import TestbedOptions  # noqa: E402
from innet.testbed.luwu.run import RunConfig, RunResult, luwu_star, run_training  # noqa: E402
from innet.testbed.luwu.status import NodeStatus  # noqa: E402
from innet.testbed.luwu.train import TrainSpec, run  # noqa: E402

pytestmark = pytest.mark.slow

STEPS = 4
LR = 0.01
"""A few steps: BMv2 takes ~10^3 innet packets/s, a step of the digits MLP at K=64 ~2,000."""
WINDOW = 16
"""Chunks in flight per member: BMv2's queue of a window of 64 outlasts the agents' RTO
(a third of the frames retransmitted, docs/luwu.md "On real BMv2"), of 16 about a tenth."""


@pytest.fixture(autouse=True)
def bmv2(bmv2_tools: object) -> None:
    """Every test here needs BMv2 (skipped, naming what is missing, without it)."""


def _local(workers: int) -> tuple[list[float], float]:
    lines: list[dict[str, Any]] = []
    run(TrainSpec(mode="local", world=workers, steps=STEPS, lr=LR), lines.append)
    return [d["loss"] for d in lines if "step" in d], lines[-1]["accuracy"]


def _node_state(directory: Path) -> dict[str, bytes]:
    """The optimizer node's arrays (parameters, both Adam moments) as bytes, by file name."""
    files = {p.name: p.read_bytes() for p in sorted(directory.glob("*.f32"))}
    assert any(name.startswith("params") for name in files), sorted(files)
    return files


def _luwu_on_innet_switch(tmp_path: Path) -> RunResult:
    options = TestbedOptions(k=LUWU_K, window=WINDOW, state_dir=tmp_path / "run")
    with open_testbed(luwu_star(workers=2, nodes=1), options, backend="loopback") as tb:
        return run_training(tb, RunConfig(mode="luwu", workers=2, nodes=1, steps=STEPS, lr=LR, timeout=120),
                            tmp_path / "state")


def test_luwu_on_simple_switch_grpc_trains_bit_exact_with_innet_switch(tmp_path: Path) -> None:
    losses, accuracy = _local(2)
    topo = luwu_star(workers=2, nodes=1)
    options = TestbedOptions(k=LUWU_K, window=WINDOW, switch_impl="bmv2", state_dir=tmp_path / "run")
    with open_testbed(topo, options, backend="mininet") as tb:
        assert tb.thrift_port is not None  # simple_switch_grpc, registers through its CLI
        before = tb.wire_bytes()
        result = run_training(tb, RunConfig(mode="luwu", workers=2, nodes=1, steps=STEPS, lr=LR, timeout=240),
                              tmp_path / "bmv2")
        after = tb.wire_bytes()
    assert innet_interfaces([s.name for s in topo.switches]) == []
    assert not result.errors, result.errors
    np.testing.assert_allclose(result.mean_loss, losses, rtol=0, atol=2e-3)
    assert len(result.finals) == 2 and all(abs(f.accuracy - accuracy) <= 0.01 for f in result.finals)
    assert all(f.tensor_bytes_between_steps == 0 for f in result.finals)
    node = result.nodes[0]
    assert isinstance(node, NodeStatus) and (node.state, node.step, node.name) == ("done", STEPS, "o1")
    # the node's link h3 <-> s1, as on innet-switch (tests/mininet/test_luwu_mininet.py): per step
    # P each way in K=64 frames plus a header-only frame per chunk, 1.5x to 2x P; BMv2 queues a
    # window of chunks long enough for the node's agent to retransmit some (each a frame at most,
    # and at most one answer each)
    assert before is not None and after is not None
    payload = 4 * result.finals[0].params * STEPS
    sent, received = (after["h3"][i] - before["h3"][i] for i in (0, 1))
    again = node.agent_stats["retransmitted"] + node.agent_stats["probes"]
    limit = 2 * payload + again * (ETH.size + IP_OVERHEAD + message_len(LUWU_K))
    assert 1.5 * payload <= sent <= limit and 1.5 * payload <= received <= limit, (sent, received, payload, again)

    reference = _luwu_on_innet_switch(tmp_path / "innet")
    assert not reference.errors, reference.errors
    assert result.losses == reference.losses  # every rank, every step, the same float
    assert _node_state(tmp_path / "bmv2" / "o1") == _node_state(tmp_path / "innet" / "state" / "o1")
