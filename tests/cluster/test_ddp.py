"""PyTorch DDP across the swarm: ``torchrun --nnodes 4 --rdzv-backend c10d`` in 4 worker tasks
spread over the 3 nodes (rendezvous on the controller task), the gradients of every step
averaged through the switch service by ``register_innet_hook`` (the agent found the switch and
its job by the service's name) and, on the same ranks, by gloo: every rank's innet average
equals gloo's within the quantization bound of innet.wire.quantize at every step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(900)

WORKERS = 4
STEPS = 4


def test_torchrun_ddp_with_the_innet_hook_averages_like_gloo(swarm_lab: Any, tmp_path: Path) -> None:
    from innet.testbed.cluster import stack
    from innet.testbed.cluster.certs import make_certs

    if not swarm_lab.torch:
        pytest.skip("torch is not installed on the host: no torch image for DDP")
    client = swarm_lab.manager.client
    spec = stack.ClusterSpec(name="innetddp", image=swarm_lab.image, workers=WORKERS, workload="ddp",
                             train_steps=STEPS, tls_dir=make_certs(tmp_path / "tls"), deadline=300)
    try:
        stack.deploy(client, spec, docker_host=swarm_lab.manager.docker_host)
        docs = stack.wait_results(client, spec, 420, progress=print)
        job = stack.job_document(client, spec.name)
        rows = stack.task_rows(client, spec.name)
    finally:
        stack.remove(client, spec.name, docker_host=swarm_lab.manager.docker_host,
                     node_clients=tuple(n.client for n in swarm_lab.nodes[1:]))
    assert job is not None and (job["workload"], job["workers"], job["k"]) == ("ddp", WORKERS, 256)
    assert [(d["rank"], d["world"], d["steps"]) for d in docs] == [(r, WORKERS, STEPS) for r in range(WORKERS)]
    for d in docs:
        assert all(diff <= limit for diff, limit in zip(d["max_diff"], d["limit"])), d
        assert d["ok"] and max(d["max_diff"]) > 0  # innet's rounding shows: the switch summed them, not gloo
    workers_on = {r["node"] for r in rows if r["service"] == "worker"}
    assert len(workers_on) >= 2, rows  # torchrun's nodes are tasks on several swarm nodes
    assert swarm_lab.wait_clean() == []
