"""Mininet tier: the dead-worker scenario of ``testkit.dead_worker`` (also run on loopback)
(SIGKILL of one worker process only: its agent must stop contributing by itself)
on a 4-host star with InnetSwitchNode (kernel UDP through veths): every surviving worker fails
within its chunk deadline naming the dead rank, the destroyed job leaves a clean switch, the
3 survivors then sum exactly on the same slot range; nothing is left after teardown."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.backends.mininet.clean import innet_interfaces
from innet.testbed.backends.select import open_testbed
from innet.testbed.core.processes import find_marked
from innet.testbed.core.topology import Link, star

from testkit.dead_worker import DEADLINE, WINDOW, dead_worker_scenario


@pytest.mark.parametrize("kill_mid_job", [True, False], ids=["sigkill-mid-job", "never-started"])
def test_dead_worker_is_named_and_the_next_job_starts_clean(tmp_path: Path, kill_mid_job: bool) -> None:
    options = TestbedOptions(state_dir=tmp_path, chunk_deadline=DEADLINE, window=WINDOW)
    with open_testbed(star(workers=4, link=Link(bw_mbps=1000)), options, backend="mininet") as tb:
        run_dir = tb.procs.dir
        dead_worker_scenario(tb, kill_mid_job)
    assert innet_interfaces(["s1"]) == []
    assert find_marked(only_run=str(run_dir)) == []
