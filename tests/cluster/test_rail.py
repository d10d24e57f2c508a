"""Rail-only across the swarm, deployed as a user does (``innet cluster up --topo rail-only``):
two rail switch services beside the controller on ``innet-n1``, two HB domains of two GPUs,
domain 1 on ``innet-n2`` and domain 2 on ``innet-n3``, each domain's exchanges on an overlay
network of its own. The rail testbed's hierarchical allreduce (reduce-scatter in the domain,
INA on the GPU's rail switch, all-gather) runs unchanged in every GPU task, and every element of
every operation equals the wrapping sum of all four GPUs' integers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(900)


def test_rail_only_allreduce_across_nodes_is_exact(swarm_lab: Any, tmp_path: Path) -> None:
    env = {**os.environ, "DOCKER_HOST": swarm_lab.manager.docker_host}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "innet.cli", "cluster", *args], capture_output=True, text=True,
                              env=env, timeout=420)

    try:
        up = run("up", "--topo", "rail-only", "--name", "innetrail", "--image", swarm_lab.image, "--domains", "2",
                 "--gpus-per-domain", "2", "--domain-nodes", "innet-n2,innet-n3", "--elements", "3000",
                 "--tls-dir", str(tmp_path / "tls"), "--timeout", "300")
        status = run("status", "--name", "innetrail", "--json")
        text = run("status", "--name", "innetrail")
    finally:
        down = run("down", "--name", "innetrail")
    assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
    rows = [line.split() for line in up.stdout.splitlines() if line.split()[:1] in (["0"], ["1"], ["2"], ["3"])]
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("0", "innet-n2", "exact", "256"), ("1", "innet-n2", "exact", "256"), ("2", "innet-n3", "exact", "256"),
        ("3", "innet-n3", "exact", "256")], up.stdout
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    job, docs = doc["job"], doc["results"]
    assert (job["workload"], job["rails"], job["domains"], job["k"]) == ("rail", ["r1", "r2"], 2, 256)
    assert [(d["rank"], d["domain"], d["gpu"], d["ok"], d["epoch"]) for d in docs] == [
        (0, 1, 1, True, job["epoch"]), (1, 1, 2, True, job["epoch"]), (2, 2, 1, True, job["epoch"]),
        (3, 2, 2, True, job["epoch"])]
    assert all(len(d["times"]) == 2 for d in docs)  # both timed operations exact, the first too
    placed = {(r["service"], r["node"]) for r in doc["tasks"] if r["state"] in ("running", "complete")}
    assert {node for service, node in placed if service.startswith("rail")} == {"innet-n1"}
    assert {service for service, _ in placed} >= {"rail1", "rail2", "controller"}
    hb = {d["domain"]: {p[0] for p in d["hb_peers"]} for d in docs}
    assert not hb[1] & hb[2]  # each domain's HB peers are addresses of its own network
    assert "2 HB domains x 2 GPUs on rails r1, r2, K=256" in text.stdout, text.stdout
    assert down.returncode == 0 and "removed service innetrail_rail1" in down.stdout, down.stdout + down.stderr
    assert swarm_lab.wait_clean() == []
