"""Mininet tier: rail-only and rail-optimized with 2 domains x 2 and x 4 GPUs; hierarchical INA
exact, the switch optimizer bit-exact with the numpy model, flat INA through the spine, and
nothing left behind (HB bridges live in their own namespaces)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from innet.testbed.bringup import TestbedOptions
from innet.testbed.rail_mininet import RailMininetTestbed
from innet.testbed.topology import Link, rail_only, rail_optimized

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from rail_checks import assert_exact, assert_training_bit_exact  # noqa: E402

NIC = Link(bw_mbps=100)
HB = Link(bw_mbps=1000)


def _leftovers(names: list[str]) -> list[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if any(f" {n}-eth" in line or f" {n}:" in line for n in names)]


@pytest.mark.slow
@pytest.mark.parametrize("gpus", [2, 4])
def test_rail_only_hierarchical_exact_and_momentum(gpus: int, tmp_path: Path) -> None:
    topo = rail_only(2, gpus, nic_link=NIC, hb_link=HB)
    with RailMininetTestbed(topo, TestbedOptions(state_dir=tmp_path, window=8)) as tb:
        assert_exact(tb.run_hierarchical([1, 300, 2000]), [1, 300, 2000], 2 * gpus)
        assert_training_bit_exact(tb, "momentum", steps=2)
    assert _leftovers([s.name for s in topo.switches]) == []


@pytest.mark.slow
@pytest.mark.parametrize("gpus", [2, 4])
def test_rail_optimized_hierarchical_flat_and_sgd(gpus: int, tmp_path: Path) -> None:
    topo = rail_optimized(2, gpus, nic_link=NIC, hb_link=HB)
    with RailMininetTestbed(topo, TestbedOptions(state_dir=tmp_path, window=8)) as tb:
        assert_exact(tb.run_hierarchical([300, 2000]), [300, 2000], 2 * gpus)
        assert_exact(tb.run_flat([300]), [300], 2 * gpus)
        assert_training_bit_exact(tb, "sgd", steps=2)
    assert _leftovers([s.name for s in topo.switches]) == []
