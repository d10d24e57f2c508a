"""Rail-only and rail-optimized on loopback: hierarchical INA exact, optimizer bit-exact, flat INA."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from innet.testbed.core import testbed as bringup
from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.core.gloo import gloo_available
from innet.testbed.rail import workloads
from innet.testbed.rail.testbed import RailTestbed
from innet.testbed.core.topology import rail_only, rail_optimized

from testkit.rail_checks import assert_digits_trained, assert_exact, assert_training_bit_exact  # noqa: E402

SIZES = [1, 300, 2000]


def _options(tmp_path: Path) -> TestbedOptions:
    return TestbedOptions(state_dir=tmp_path, window=8)


@pytest.mark.slow
@pytest.mark.parametrize("gpus", [2, 4])
def test_rail_only_on_loopback(gpus: int, tmp_path: Path) -> None:
    """One bring-up per size: hierarchical INA exact (and the host ring, NCCL's hierarchical
    baseline, at 4 GPUs per domain), the momentum optimizer bit-exact with the numpy model,
    the all-to-all, and at 2 GPUs per domain the switch counters and digits training."""
    sizes = SIZES if gpus == 2 else [300, 2000]
    with RailTestbed(rail_only(2, gpus), _options(tmp_path), backend="loopback") as tb:
        assert tb.flat is None
        assert_exact(workloads.hierarchical(tb, sizes), sizes, 2 * gpus)
        if gpus == 2:
            counters = tb.counters()
            assert counters["innet_drops"] == 0 and counters["innet_stale"] == 0
            assert counters["innet_contributions"] == 2 * counters["innet_completions"]  # y = 2 per rail
        else:  # the host-based baseline: the rail's GPUs reduce-scatter and all-gather over TCP
            assert_exact(workloads.hierarchical(tb, sizes, collective="ring"), sizes, 2 * gpus)
        assert_training_bit_exact(tb, "momentum", steps=3 if gpus == 2 else 2)
        assert_exact(workloads.alltoall(tb, 30000, repeats=1), [30000], 2 * gpus)
        if gpus == 2:
            assert_digits_trained(tb, steps=12)


@pytest.mark.slow
@pytest.mark.parametrize("gpus", [2, 4])
def test_rail_optimized_on_loopback(gpus: int, tmp_path: Path) -> None:
    """One bring-up per size: hierarchical and flat INA exact (the flat job completes on the
    spine), SGD bit-exact with the numpy model, the all-to-all on both routes."""
    sizes = SIZES if gpus == 2 else [300, 2000]
    with RailTestbed(rail_optimized(2, gpus), _options(tmp_path), backend="loopback") as tb:
        assert_exact(workloads.hierarchical(tb, sizes), sizes, 2 * gpus)
        assert_exact(workloads.flat(tb, sizes), sizes, 2 * gpus)
        assert tb.flat is not None
        spine = tb.controller[tb.grid.spine].counters(tb.flat.job_id)
        assert spine["innet_completions"][tb.flat.job_id] > 0
        assert_training_bit_exact(tb, "sgd", steps=3 if gpus == 2 else 2)
        for route in ("direct", "two-step"):
            assert_exact(workloads.alltoall(tb, 30000, repeats=1, route=route), [30000], 2 * gpus)


def test_rail_only_has_no_direct_alltoall_or_flat_ina(tmp_path: Path) -> None:
    tb = RailTestbed(rail_only(2, 2), _options(tmp_path), backend="loopback")  # not started: planning only
    with pytest.raises(bringup.TestbedError, match=r"topology rail-only-2x2: the direct all-to-all needs a spine"):
        workloads.alltoall(tb, 10, route="direct")
    with pytest.raises(bringup.TestbedError, match=r"topology rail-only-2x2: flat INA needs a spine"):
        workloads.flat(tb, [10])


@pytest.mark.slow
@pytest.mark.parametrize("topology", [rail_only, rail_optimized])
def test_gloo_ring_on_a_rail_testbed(topology: Any, tmp_path: Path) -> None:
    """gloo's ranks in ring order, rendezvous on 127.0.0.1 (not the topology's 10.0.0.1)."""
    if not gloo_available():
        pytest.skip("torch (the gloo baseline's optional dependency) is not installed")
    with RailTestbed(topology(2, 2), _options(tmp_path), backend="loopback") as tb:
        assert_exact(tb.run_gloo([1000], repeats=1, timeout=60), [1000], 4)


MLP_PARAM_CHUNKS = 9216
"""Parameter chunks per switch: 9216 x K=64 = 589,824 parameters, half of the 1,126,410 MLP."""


@pytest.mark.slow
def test_rail_only_2x2_trains_a_1m_parameter_mlp_no_single_switch_could_hold(tmp_path: Path) -> None:
    """The rail switches are the optimizer (momentum in registers) of a 64-1024-1024-10 MLP:
    each holds half of its 1,126,410 parameters; every GPU and both switches' registers end
    bit-exact with the numpy model (``SwitchModel`` per shard)."""
    from innet.host.training.model import Mlp

    assert Mlp((1024, 1024)).size > MLP_PARAM_CHUNKS * 64
    options = TestbedOptions(state_dir=tmp_path, window=64, defines=(("INNET_PARAM_CHUNKS", str(MLP_PARAM_CHUNKS)),))
    with RailTestbed(rail_only(2, 2), options, backend="loopback") as tb:
        assert_digits_trained(tb, steps=12, tolerance=0.05, hidden=(1024, 1024), lr=0.05)
