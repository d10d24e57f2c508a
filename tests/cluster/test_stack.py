"""innet's stack across a 3-node swarm: 8 workers spread over the three nodes allreduce
exactly through the switch service (P4Runtime over mutual TLS, K from the overlay MTU),
then train the demo model bit-exact with the switch's numpy model (the model every
single-machine run, loopback and Mininet star, is checked against); the stack's removal
leaves no service, container, network or volume on any node (the lab's own teardown is
checked by the ``swarm_lab`` fixture: no namespace, link or daemon left)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(900)  # image build (after a source change) and push included

WORKERS = 8
ELEMENTS = 4096
TRAIN_STEPS = 10


def _wait_clean(lab: Any, deadline: float = 60.0) -> list[str]:
    end = time.monotonic() + deadline
    while (left := lab.leftovers()) and time.monotonic() < end:
        time.sleep(1.0)
    return left


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
    assert _wait_clean(swarm_lab) == []
