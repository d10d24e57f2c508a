"""Data parallel inside each site: two pipelines across two sites, each stage's gradients
summed by its site's innet switch; the result matches averaging the replicas' gradients."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from innet.host.geo.graph import mlp
from innet.host.geo.launch import launch
from innet.host.geo.stages import partition
from innet.host.geo.specs import DigitsSpec, DpSpec, MlpSpec
from innet.host.geo.stage_process import StageJob, load_params
from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.geo.testbed import GeoTestbed
from innet.testbed.geo.topology import Site, Wan, geo
from innet.testbed.core.topology import Link

from testkit.geo_reference import averaged_sgd

SIZES = [64, 16, 10]  # fc0 relu0 fc1 loss
CUTS = (2,)
STEPS, BATCH, LR = 2, 16, 0.1


@pytest.mark.slow
def test_two_replicas_per_site_average_through_the_site_switches(tmp_path: Path) -> None:
    topo = geo([Site("a", 2), Site("b", 2)], [Wan("a", "b", Link(bw_mbps=100, delay_ms=5))])
    plans = partition(mlp(SIZES), CUTS)
    sizes = [64 * 16 + 16, 16 * 10 + 10]
    with GeoTestbed(topo, TestbedOptions(state_dir=tmp_path / "state", window=16), backend="loopback") as tb:
        epochs = {s: tb.attach_site(s) for s in ("a", "b")}
        pipelines = []
        for r in range(2):
            jobs = []
            for i, site in enumerate(("a", "b")):
                dp = DpSpec(tb.dp_agent(site, r, epochs[site], sizes[i]), replicas=2)
                jobs.append(StageJob(model=MlpSpec(tuple(SIZES)), task=DigitsSpec(), cuts=CUTS,
                                     index=i, steps=STEPS, batch=BATCH, data_seed=1000 * r, lr=LR, probe=False,
                                     dp=dp, params_out=str(tmp_path / f"r{r}s{i}.npz"), timeout=30.0))
            pipelines.append(jobs)
        launch(pipelines, timeout=60.0)
    ref = averaged_sgd(SIZES, STEPS, BATCH, LR)
    for r in range(2):
        got = {}
        for i in range(len(plans)):
            got.update(load_params(tmp_path / f"r{r}s{i}.npz"))
        for n, p in ref.items():
            for k, v in p.items():
                np.testing.assert_allclose(got[n][k], v, atol=2e-4)
