"""innet's stack across a 3-node swarm: 8 workers spread over the three nodes allreduce
exactly through the switch service (P4Runtime over mutual TLS, K from the overlay MTU),
then train the demo model bit-exact with the switch's numpy model (the model every
single-machine run, loopback and Mininet star, is checked against); the stack's removal
leaves no service, container, network or volume on any node (the lab's own teardown is
checked by the ``swarm_lab`` fixture: no namespace, link or daemon left)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(900)  # image build (after a source change) and push included

WORKERS = 8
ELEMENTS = 4096
TRAIN_STEPS = 10


def test_eight_workers_over_three_nodes_exact_and_bit_exact(swarm_lab: Any, tmp_path: Path) -> None:
    from innet.testbed.cluster import stack
    from innet.testbed.cluster.certs import make_certs
    from innet.testbed.cluster.roles import k_for_overlay
    from innet.testbed.ina.compose import ComposeConfig, digest, expected_sum, expected_training

    client = swarm_lab.manager.client
    spec = stack.ClusterSpec(name="innettest", image=swarm_lab.image, workers=WORKERS, elements=ELEMENTS,
                             train_steps=TRAIN_STEPS, tls_dir=make_certs(tmp_path / "tls"), deadline=240)
    k = k_for_overlay(spec.overlay_mtu)
    try:
        stack.deploy(client, spec, docker_host=swarm_lab.manager.docker_host)
        docs = stack.wait_results(client, spec, 360, progress=print)
        job = stack.job_document(client, spec.name)
        rows = stack.task_rows(client, spec.name)
    finally:
        removed = stack.remove(client, spec.name, docker_host=swarm_lab.manager.docker_host,
                               node_clients=tuple(n.client for n in swarm_lab.nodes[1:]))
    want_sum = digest(expected_sum(WORKERS, ELEMENTS))
    want_train = digest(expected_training(ComposeConfig(workers=WORKERS, train_steps=TRAIN_STEPS, k=k)))
    assert k == 256  # VXLAN's 1450 bytes carry a tunnelled K=256 frame
    assert job is not None and job["k"] == k and job["workers"] == WORKERS
    assert [(d["rank"], d["ok"], d["sha256"], d["k"]) for d in docs] == [(r, True, want_sum, k) for r in range(WORKERS)]
    assert [(d["train"]["bit_exact"], d["train"]["sha256"]) for d in docs] == [(True, want_train)] * WORKERS
    assert {d["node"] for d in docs} == {"innet-n1", "innet-n2", "innet-n3"}  # spread over all three nodes
    switch_nodes = {r["node"] for r in rows if r["service"] == "switch"}
    assert switch_nodes == {"innet-n1"}  # pinned by the innet.switch label
    assert {"removed service innettest_switch", "removed service innettest_worker"} <= set(removed)
    assert swarm_lab.wait_clean() == []


def test_cli_up_status_logs_down(swarm_lab: Any, tmp_path: Path) -> None:
    """What a user types on a manager: ``innet cluster up`` prints a row per rank and exits 0,
    ``status`` shows the tasks and the job, ``logs switch`` the switch's ports, ``down`` removes it."""
    import subprocess
    import sys

    env = {**os.environ, "DOCKER_HOST": swarm_lab.manager.docker_host}
    innet = [sys.executable, "-m", "innet.cli", "cluster"]

    def run(*args: str, timeout: float = 420) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*innet, *args], capture_output=True, text=True, env=env, timeout=timeout)

    try:
        up = run("up", "--name", "innetcli", "--image", swarm_lab.image, "--workers", "4", "--steps", "3",
                 "--tls-dir", str(tmp_path / "tls"), "--timeout", "300")
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
        rows = [line.split() for line in up.stdout.splitlines() if line.split()[:1] in (["0"], ["1"], ["2"], ["3"])]
        assert [(r[0], r[2], r[3]) for r in rows] == [(str(i), "exact", "256") for i in range(4)], up.stdout
        assert up.stdout.count("bit-exact") == 4, up.stdout
        status = run("status", "--name", "innetcli")
        assert status.returncode == 0 and "job 1 at epoch 1, 4 workers, K=256" in status.stdout, status.stdout
        logs = run("logs", "switch", "--name", "innetcli")
        assert logs.returncode == 0 and "port 4 on UDP 0.0.0.0:9004" in logs.stdout, logs.stdout + logs.stderr
    finally:
        down = run("down", "--name", "innetcli")
    assert down.returncode == 0 and "removed service innetcli_worker" in down.stdout, down.stdout + down.stderr
    assert swarm_lab.wait_clean() == []
    again = run("down", "--name", "innetcli")
    assert (again.returncode, again.stdout.strip()) == (0, "stack innetcli: nothing deployed")


def test_cli_without_a_swarm_is_one_line(tmp_path: Path) -> None:
    """Against an engine that is no swarm manager (a socket nobody serves here): one line, status 1."""
    import subprocess
    import sys

    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/none.sock"}
    out = subprocess.run([sys.executable, "-m", "innet.cli", "cluster", "status"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith("innet cluster status: error: no Docker engine answers"), out.stderr
