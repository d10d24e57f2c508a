"""Flags reach the run they name: ``innet demo --topo rail-*`` takes --steps and --sizes as
given (50 steps only when --steps is not given), with the run itself replaced by a recorder."""

from __future__ import annotations

from typing import Any

import pytest

from innet.cli import main


@pytest.fixture
def rail_runs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from innet.testbed.cli import commands
    from innet.testbed.rail import demo

    seen: list[Any] = []

    from innet.testbed.rail.records import TrainingSummary

    def record(config: Any, console: Any) -> demo.RailDemoResult:
        seen.append(config)
        training = TrainingSummary("digits", "momentum", 0.5, 0.9, config.steps, 8, 704, 1.0, {}, 1.0, 1.0, 2.3, 1.6,
                                   workers_agree=True, switch_registers_match=True, bit_exact_with_model=True)
        return demo.RailDemoResult(config.topo, "loopback", "innet", config, training, ())

    monkeypatch.setattr(demo, "run", record)
    monkeypatch.setattr(commands, "_terminate_on_sigterm", lambda: None)
    return seen


def test_rail_demo_takes_steps_and_sizes_as_given(rail_runs: list[Any], tmp_path: Any) -> None:
    assert main(["demo", "--topo", "rail-only", "--steps", "80", "--sizes", "1K,2K", "--out", str(tmp_path)]) == 0
    (config,) = rail_runs
    assert (config.steps, config.sizes, config.topo) == (80, (1024, 2048), "rail-only")


def test_rail_demo_without_steps_trains_its_shorter_default(rail_runs: list[Any], tmp_path: Any) -> None:
    from innet.testbed.cli.commands import RAIL_DEMO_STEPS
    from innet.testbed.rail.demo import RailDemoConfig

    assert main(["demo", "--topo", "rail-optimized", "--out", str(tmp_path)]) == 0
    assert main(["train", "--topo", "rail-optimized", "--out", str(tmp_path)]) == 0
    demo, train = rail_runs
    assert (demo.steps, demo.sizes, demo.benchmark) == (RAIL_DEMO_STEPS, RailDemoConfig.sizes, True)
    assert (train.steps, train.benchmark) == (150, False)
