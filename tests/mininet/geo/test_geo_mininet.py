"""Mininet tier: the geo topology (3 sites x 2 hosts, each site a star around its own innet
switch, WAN veths 10M/40ms, 100M/10ms, 1G/2ms) comes up, trains two RAD steps across the
3 sites with the stage gradients summed inside each site by its switch, equals the
single-process result, and goes down leaving no interface, host namespace or process."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

from innet.host.geo.launch import SINGLE_THREAD_BLAS, launch
from innet.host.geo.specs import DigitsSpec, DpSpec, MlpSpec
from innet.host.geo.stage_process import StageJob, load_params
from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.geo.testbed import GeoTestbed
from innet.testbed.geo.topology import geo
from innet.testbed.core.processes import pid_alive, read_records

from testkit.geo_reference import averaged_sgd

SIZES = [64, 32, 24, 10]  # fc0 relu0 | fc1 relu1 | fc2 loss
CUTS = (2, 4)
SITES = ("a", "b", "c")
STEPS, BATCH, LR = 2, 16, 0.1


def _interfaces(switches: Sequence[str]) -> list[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if any(f" {n}-eth" in line for n in switches)]


@pytest.mark.slow
def test_geo_sites_in_mininet_run_rad_across_three_sites_and_leave_nothing(tmp_path: Path) -> None:
    topo = geo()
    elements = [64 * 32 + 32, 32 * 24 + 24, 24 * 10 + 10]
    tb = GeoTestbed(topo, TestbedOptions(state_dir=tmp_path / "state", window=16, chunk_deadline=10.0), backend="mininet")
    with tb:
        host_pids = [h.pid for h in tb.network.net.hosts]
        switch_pids = [tb.network.net.get(s.name).process.pid for s in topo.switches]
        assert all(pid_alive(p) for p in host_pids + switch_pids)
        assert sorted(tb.site_jobs) == list(SITES)
        # the WAN delay is on the path (40 ms each way a-b): every frame, not only the transport's
        ping = tb.network.net.get("s1h1").cmd("ping -c 2 -i 0.2 -W 2 10.0.2.1")
        rtts = [float(x.split("time=")[1].split()[0]) for x in ping.splitlines() if "time=" in x]
        assert rtts and all(80.0 <= r < 400.0 for r in rtts), ping
        epochs = {s: tb.attach_site(s) for s in SITES}
        pipelines = []
        for r in range(2):
            jobs = []
            for i, site in enumerate(SITES):
                host = tb.stage_host(site, r)
                nxt = tb.transport_shape(site, SITES[i + 1]) if i < 2 else None
                prev = tb.transport_shape(site, SITES[i - 1]) if i > 0 else None
                jobs.append(StageJob(
                    model=MlpSpec(tuple(SIZES)), task=DigitsSpec(), cuts=CUTS, index=i,
                    steps=STEPS, batch=BATCH, data_seed=1000 * r, lr=LR, probe=(r == 0),
                    listen=(topo.host(host).address, 0),
                    shape_next=nxt, shape_prev=prev,
                    dp=DpSpec(tb.dp_agent(site, r, epochs[site], elements[i]), replicas=2),
                    params_out=str(tmp_path / f"r{r}s{i}.npz"), timeout=30.0))
            pipelines.append(jobs)
        hosts = {h.address: h.name for h in topo.workers}
        before = tb.wan_bytes()
        stages: list[int] = []

        def spawn(job: StageJob, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
            popen = tb.spawn_stage(hosts[job.listen[0]], argv, SINGLE_THREAD_BLAS, name)
            stages.append(popen.pid)
            return popen

        out = launch(pipelines, timeout=50.0, spawn=spawn)
        # recorded, so `innet testbed cleanup` ends them after a crash of this process
        recorded = {r.pid: r.name for r in read_records(tb.procs.dir)}
        assert len(stages) == 6 and all(recorded.get(pid, "").startswith("geo pipeline ") for pid in stages), \
            (stages, recorded)
        after = tb.wan_bytes()
        completions = {s: tb.controller[tb.site_switch(s)].counters(tb.site_jobs[s].job_id)["innet_completions"]
                       for s in SITES}
    # activations a -> b on the 10 Mbit/s link (s1 port 101), b -> c on s2's port 102; gradients back
    sent = {k: after[k] - before[k] for k in after}
    assert sent["s1-eth101"] > 10_000 and sent["s2-eth101"] > 10_000, sent
    assert sent["s2-eth102"] > 10_000 and sent["s3-eth101"] > 10_000, sent
    # the probe measured the HTB-shaped 10 Mbit/s link, not the veth's native rate
    assert 2e6 < out[0][0].of("done")[0]["bandwidth_next_bps"] < 12e6
    # every site summed its stage's gradients in its switch
    assert all(sum(cells.values()) > 0 for cells in completions.values()), completions
    ref = averaged_sgd(SIZES, STEPS, BATCH, LR)
    for r in range(2):
        got: dict[str, Any] = {}
        for i in range(3):
            got.update(load_params(tmp_path / f"r{r}s{i}.npz"))
        for n, p in ref.items():
            for k, v in p.items():
                np.testing.assert_allclose(got[n][k], v, atol=2e-4)
    assert not any(pid_alive(p) for p in host_pids + switch_pids)
    assert _interfaces([s.name for s in topo.switches]) == []
