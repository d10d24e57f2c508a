"""LuWu across the 3-node swarm: the optimizer node a service of its own, pinned by the
``innet.switch`` label beside the switch on ``innet-n1``, the 4 workers (torch trainers) on the
two other nodes (``innet-n1`` loses its ``innet.worker`` label for the test); the training is
the same, step by step and rank by rank, as the same run on the Mininet star (equal float32
losses at every step and equal test accuracy: the same parameters at every step)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(900)



def test_luwu_with_its_node_service_trains_as_on_the_mininet_star(swarm_lab: Any, luwu_star_run: Any,
                                                                    tmp_path: Path) -> None:
    from innet.testbed.cluster import stack
    from innet.testbed.cluster.certs import make_certs

    if not swarm_lab.torch:
        pytest.skip("torch is not installed on the host: no torch image for LuWu's trainers")
    client = swarm_lab.manager.client
    star = luwu_star_run
    workers, steps = len(star.losses), len(star.losses[0])
    spec = stack.ClusterSpec(name="innetluwu", image=swarm_lab.image, workers=workers, workload="luwu", nodes=1,
                             train_steps=steps, tls_dir=make_certs(tmp_path / "tls"), deadline=300)
    stack.label_node(client, "innet-n1", "innet.worker", None)
    try:
        stack.deploy(client, spec, docker_host=swarm_lab.manager.docker_host)
        docs = stack.wait_results(client, spec, 420, progress=print)
        nodes = stack.wait_node_results(client, spec)
        job = stack.job_document(client, spec.name)
        rows = stack.task_rows(client, spec.name)
    finally:
        stack.label_node(client, "innet-n1", "innet.worker", "true")
        stack.remove(client, spec.name, docker_host=swarm_lab.manager.docker_host,
                     node_clients=tuple(n.client for n in swarm_lab.nodes[1:]))
    assert job is not None and (job["workload"], job["nodes"], job["k"]) == ("luwu", 1, 256)
    assert [(d["rank"], d["ok"]) for d in docs] == [(r, True) for r in range(workers)]
    assert [d["losses"] for d in docs] == star.losses  # float32 losses, equal at every step and rank
    assert [d["accuracy"] for d in docs] == [f.accuracy for f in star.finals]
    assert [(n["name"], n["state"], n["step"], n["rank"]) for n in nodes] == [("o1", "done", steps, workers)]
    placed = {(r["service"], r["node"]) for r in rows if r["state"] == "complete" or r["state"] == "running"}
    assert {node for service, node in placed if service in ("node", "switch")} == {"innet-n1"}
    assert {node for service, node in placed if service == "worker"} == {"innet-n2", "innet-n3"}
    assert swarm_lab.wait_clean() == []
