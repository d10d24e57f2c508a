"""Faults on the 3-node swarm: a node drained (``docker node update --availability drain``)
while its worker tasks wait for the job; Swarm moves them to the other nodes with their task
slots, hence their ranks, and the allreduce and training still complete exactly.

The stack is deployed with its controller held (scaled to 0), so the drain lands while the
workers wait for the job, and the controller is started after it; not mid-operation: a task moved mid-allreduce restarts with the epoch its
set already used, and rejoining needs a new epoch, which this stack does not attach yet."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(900)

WORKERS = 6
TRAIN_STEPS = 3


def _set_availability(client: Any, hostname: str, availability: str) -> None:
    for node in client.nodes.list():
        if node.attrs["Description"]["Hostname"] == hostname:
            spec = node.attrs["Spec"]
            spec["Availability"] = availability
            node.update(spec)
            return
    raise AssertionError(f"no node {hostname}")


def test_drained_node_moves_its_workers_and_training_completes(swarm_lab: Any, tmp_path: Path) -> None:
    from innet.testbed.cluster import stack
    from innet.testbed.cluster.certs import make_certs
    from innet.testbed.ina.compose import ComposeConfig, digest, expected_sum, expected_training

    client = swarm_lab.manager.client
    spec = stack.ClusterSpec(name="innetdrain", image=swarm_lab.image, workers=WORKERS, elements=1024,
                             train_steps=TRAIN_STEPS, tls_dir=make_certs(tmp_path / "tls"), deadline=240,
                             hold_controller=True)
    drained = "innet-n3"
    try:
        stack.deploy(client, spec, docker_host=swarm_lab.manager.docker_host)
        end = time.monotonic() + 240
        while True:  # until a worker task runs on the node to drain, and the job is not attached yet
            rows = stack.task_rows(client, spec.name)
            on_node = [r for r in rows if r["service"] == "worker" and r["node"] == drained and r["state"] == "running"]
            if on_node:
                break
            assert time.monotonic() < end, f"no worker task running on {drained}: {rows}"
            time.sleep(0.5)
        assert stack.job_document(client, spec.name) is None, "the job was attached before the drain"
        _set_availability(client, drained, "drain")
        stack.release_controller(client, spec.name)
        docs = stack.wait_results(client, spec, 360, progress=print)
        end = time.monotonic() + 90
        while True:  # a drained node's task reports its shutdown a little after the results
            rows = stack.task_rows(client, spec.name)
            if not any(r["state"] == "running" for r in rows if r["service"] == "worker" and r["node"] == drained):
                break
            if time.monotonic() > end:
                break  # the assertion below names what is still running there
            time.sleep(1)
    finally:
        _set_availability(client, drained, "active")
        stack.remove(client, spec.name, docker_host=swarm_lab.manager.docker_host,
                     node_clients=tuple(n.client for n in swarm_lab.nodes[1:]))
    want_sum = digest(expected_sum(WORKERS, 1024))
    want_train = digest(expected_training(ComposeConfig(workers=WORKERS, train_steps=TRAIN_STEPS, k=256)))
    assert [(d["rank"], d["ok"], d["sha256"]) for d in docs] == [(r, True, want_sum) for r in range(WORKERS)]
    assert [(d["train"]["bit_exact"], d["train"]["sha256"]) for d in docs] == [(True, want_train)] * WORKERS
    workers = [r for r in rows if r["service"] == "worker"]
    moved = {r["slot"] for r in workers if r["node"] == drained} & {r["slot"] for r in workers if r["node"] != drained}
    assert moved, f"no worker slot of {drained} was moved to another node: {workers}"
    assert all(r["state"] != "running" for r in workers if r["node"] == drained)
