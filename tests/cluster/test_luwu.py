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

WORKERS = 4
STEPS = 6


def _mininet_run() -> Any:
    from innet.testbed.backends.select import open_testbed
    from innet.testbed.core.testbed import TestbedOptions
    from innet.testbed.luwu.run import RunConfig, luwu_star, run_training

    with open_testbed(luwu_star(WORKERS, 1), TestbedOptions(k=256, defines=(("INNET_K", "256"),)),
                      backend="mininet") as tb:
        return run_training(tb, RunConfig(mode="luwu", workers=WORKERS, nodes=1, steps=STEPS, duplex=False,
                                          timeout=300))


def test_luwu_with_its_node_service_trains_as_on_the_mininet_star(swarm_lab: Any, tmp_path: Path) -> None:
    from innet.testbed.backends.select import resolve_backend
    from innet.testbed.cluster import stack
    from innet.testbed.cluster.certs import make_certs

    if not swarm_lab.torch:
        pytest.skip("torch is not installed on the host: no torch image for LuWu's trainers")
    if resolve_backend("auto") != "mininet":
        pytest.skip("Mininet is not available here: no star to compare the swarm's LuWu run with")
    client = swarm_lab.manager.client
    spec = stack.ClusterSpec(name="innetluwu", image=swarm_lab.image, workers=WORKERS, workload="luwu", nodes=1,
                             train_steps=STEPS, tls_dir=make_certs(tmp_path / "tls"), deadline=300)
    stack.label_node(client, "innet-n1", "innet.worker", None)
    try:
        stack.deploy(client, spec, docker_host=swarm_lab.manager.docker_host)
        docs = stack.wait_results(client, spec, 420, progress=print)
        nodes = stack.node_results(client, spec.name)
        job = stack.job_document(client, spec.name)
        rows = stack.task_rows(client, spec.name)
    finally:
        stack.label_node(client, "innet-n1", "innet.worker", "true")
        stack.remove(client, spec.name, docker_host=swarm_lab.manager.docker_host,
                     node_clients=tuple(n.client for n in swarm_lab.nodes[1:]))
    star = _mininet_run()
    assert not star.errors, star.errors
    assert job is not None and (job["workload"], job["nodes"], job["k"]) == ("luwu", 1, 256)
    assert [(d["rank"], d["ok"]) for d in docs] == [(r, True) for r in range(WORKERS)]
    assert [d["losses"] for d in docs] == star.losses  # float32 losses, equal at every step and rank
    assert [d["accuracy"] for d in docs] == [f["accuracy"] for f in star.finals]
    assert [(n["name"], n["state"], n["step"], n["rank"]) for n in nodes] == [("o1", "done", STEPS, WORKERS)]
    placed = {(r["service"], r["node"]) for r in rows if r["state"] == "complete" or r["state"] == "running"}
    assert {node for service, node in placed if service in ("node", "switch")} == {"innet-n1"}
    assert {node for service, node in placed if service == "worker"} == {"innet-n2", "innet-n3"}
    assert swarm_lab.wait_clean() == []
