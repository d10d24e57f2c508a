"""The geo topology on loopback: one innet switch per site, up and down with nothing left behind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from innet.host.agent.agent import Agent
from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.geo.testbed import GeoTestbed
from innet.testbed.geo.topology import Site, geo
from innet.host.geo.stage_process import agent_config
from innet.host.geo.specs import DpSpec
from innet.testbed.core.processes import find_marked, pid_alive


@pytest.mark.slow
def test_geo_sites_come_up_sum_inside_a_site_and_go_down_leaving_nothing(tmp_path: Path) -> None:
    topo = geo([Site("a", 2), Site("b", 2), Site("c", 1)])
    tb = GeoTestbed(topo, TestbedOptions(state_dir=tmp_path, window=8), backend="loopback")
    with tb:
        assert sorted(tb.site_jobs) == ["a", "b"]  # site c has one worker: nothing to aggregate
        pids = [tb.procs.popens[f"switch-{s.name}"].pid for s in topo.switches]
        runs = [tb.procs.dir]
        assert len(pids) == 3 and all(pid_alive(p) for p in pids)
        epoch = tb.attach_site("b")
        agents = [Agent(agent_config(DpSpec(tb.dp_agent("b", r, epoch, 100), replicas=2), sum_bound=4.0),
                        capacity=100).start() for r in range(2)]
        try:
            import threading

            out: dict[int, np.ndarray] = {}
            threads = [threading.Thread(target=lambda r=r: out.__setitem__(
                r, agents[r].allreduce(np.full(100, r + 1.0, np.float32), timeout=30))) for r in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            np.testing.assert_allclose(out[0], 3.0, atol=1e-3)
            np.testing.assert_allclose(out[1], 3.0, atol=1e-3)
        finally:
            for a in agents:
                a.close()
    assert not any(pid_alive(p) for p in pids)
    assert not any(r.exists() for r in runs)
    assert not [p for p, run in find_marked() if any(str(r) in run for r in runs)]
