"""A rail switch fails mid-job (loopback: the process hangs, SIGSTOP): the GPUs of that rail fail
within their chunk deadline naming the switch, the others name the peer that left their HB domain,
the other rail's switch holds no half-finished slot, and after re-installing the job a new run is exact.

An HB domain dies mid-training (every GPU SIGKILLed): the spare domain takes its rank over from the
state the rail switches hold, and the run ends bit for bit where an uninterrupted one does."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.core.ina_worker import EXIT_AGGREGATION
from innet.testbed.rail import workloads
from innet.testbed.rail.testbed import RailTestbed
from innet.testbed.rail.worker import EXIT_HB
from innet.testbed.core.topology import rail_only
from innet.testbed.rail.digits import DigitsConfig, simulate
from innet.testbed.rail.grid import shard_bounds
from innet.testbed.rail.spare import run_digits_failover

from testkit.rail_checks import assert_exact  # noqa: E402

DEADLINE = 2.0


def _wait_for(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout} s")
        time.sleep(0.05)


@pytest.mark.slow
def test_a_hung_rail_switch_fails_its_rail_and_a_reinstalled_job_runs(tmp_path: Path) -> None:
    options = TestbedOptions(state_dir=tmp_path, window=8, chunk_deadline=DEADLINE)
    with RailTestbed(rail_only(2, 2), options, backend="loopback") as tb:
        procs = tb.spawn_rail("allreduce", sizes=(4000,), repeats=200)
        _wait_for(lambda: tb.rail_counters("r2")["innet_completions"] > 20, 30, "rail r2 did not aggregate")
        tb.freeze_switch("r2")
        frozen = time.monotonic()
        codes = {}
        for name, popen in procs:
            popen.wait(timeout=DEADLINE + 15)
            codes[name] = (popen.returncode, tb.procs.log_tail(name))
        elapsed = time.monotonic() - frozen
        for name, _ in procs:
            tb.procs.forget(name)
        tb.thaw_switch("r2")
        for host in ("d1g2", "d2g2"):  # rail r2: their rail switch does not answer
            code, log = codes[f"rail-{host}"]
            assert code == EXIT_AGGREGATION, log
            assert "rail switch r2 (10.0.0.253): aggregation failed" in log and "no answer from switch" in log
        for host in ("d1g1", "d2g1"):  # rail r1: the HB peer on r2 left mid-collective
            code, log = codes[f"rail-{host}"]
            assert code == EXIT_HB, log
            peer = host.replace("g1", "g2")
            assert f"{peer} (127.0.0.1:" in log
        assert elapsed < DEADLINE + 10
        assert tb.controller["r1"].occupancy(tb.job.job_id).busy == 0
        assert tb.rail_counters("r1")["innet_drops"] == 0
        tb.replace_job()
        assert_exact(workloads.hierarchical(tb, [1000]), [1000], 4)


@pytest.mark.slow
@pytest.mark.parametrize(("kill_at", "warm"), [(26, False), (15, True)])
def test_a_spare_domain_takes_over_a_dead_one_with_no_lost_or_repeated_step(kill_at: int, warm: bool,
                                                                            tmp_path: Path) -> None:
    options = TestbedOptions(state_dir=tmp_path, window=8, chunk_deadline=60.0)
    with RailTestbed(rail_only(domains=3, gpus_per_domain=2), options, backend="loopback", spares=1) as tb:
        assert tb.active == [0, 1] and tb.gpus == 4
        # the kill at 26 r1 completions lands early in the run, with steps to spare for a
        # counter read a loaded machine delays (with 16 steps the run once ended first)
        config = DigitsConfig(gpus=tb.gpus, steps=32)
        plain = workloads.digits(tb, config)
        out = run_digits_failover(tb, config, rank=1, kill_at=kill_at, warm=warm)
        report = out.failover
        assert (report.failed_domain, report.spare_domain) == (1, 2) and tb.active == [0, 2]
        assert 0 <= report.resume_step < config.steps
        finals = out.run.finals
        assert sorted(finals) == [0, 1, 2, 3]  # the spare's GPUs report the dead domain's ranks
        for rank, params in finals.items():
            assert np.array_equal(params, plain.finals[0]), f"rank {rank} differs from the uninterrupted run"
        assert np.array_equal(out.run.registers, plain.finals[0])
        bounds = shard_bounds(plain.initial.size, tb.options.k, tb.grid.x)
        assert np.array_equal(simulate(config, plain.initial, bounds, [plain.jobs[r] for r in tb.grid.rails]),
                              plain.finals[0])
        spare_steps = sorted(line.step for line in out.run.lines[2].steps)
        assert spare_steps == list(range(report.resume_step, config.steps))
        assert report.recovery_s > 0 and report.read_state_s > 0
