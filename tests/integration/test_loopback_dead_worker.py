"""Loopback testbed (no root), scenario in testkit.dead_worker: a worker dies (SIGKILL of its worker process mid-job, whose agent
process must then stop on its own, or it never starts); every other worker fails within its chunk deadline naming the dead rank; destroying
the job leaves its slot range, counters and table entries clean; a new job of the survivors
on the same slots sums exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.backends.select import open_testbed
from innet.testbed.core.topology import star

from testkit.dead_worker import DEADLINE, WINDOW, dead_worker_scenario


@pytest.mark.slow
@pytest.mark.parametrize("kill_mid_job", [True, False], ids=["sigkill-mid-job", "never-started"])
def test_dead_worker_is_named_and_the_next_job_starts_clean(tmp_path: Path, kill_mid_job: bool) -> None:
    options = TestbedOptions(state_dir=tmp_path, chunk_deadline=DEADLINE, window=WINDOW)
    with open_testbed(star(workers=4), options, backend="loopback") as tb:
        dead_worker_scenario(tb, kill_mid_job)
