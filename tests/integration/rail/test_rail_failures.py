"""A rail switch fails mid-job (loopback: the process hangs, SIGSTOP): the GPUs of that rail fail
within their chunk deadline naming the switch, the others name the peer that left their HB domain,
the other rail's switch holds no half-finished slot, and after re-installing the job a new run is exact."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.core.ina_worker import EXIT_AGGREGATION
from innet.testbed.rail.testbed import RailTestbed
from innet.testbed.rail.worker import EXIT_HB
from innet.testbed.core.topology import rail_only

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
        tb.reinstall()
        assert_exact(tb.run_hierarchical([1000]), [1000], 4)
