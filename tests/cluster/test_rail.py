"""Rail-only across the swarm: two rail switch services beside the controller on ``innet-n1``,
two HB domains of two GPUs, domain 1 on ``innet-n2`` and domain 2 on ``innet-n3``, each domain's
exchanges on an overlay network of its own. The rail testbed's hierarchical allreduce
(reduce-scatter in the domain, INA on the GPU's rail switch, all-gather) runs unchanged in
every GPU task, and every element of every operation equals the wrapping sum of all four GPUs'
integers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(900)


def test_rail_only_allreduce_across_nodes_is_exact(swarm_lab: Any, tmp_path: Path) -> None:
    from innet.testbed.cluster import rail_stack, stack
    from innet.testbed.cluster.certs import make_certs

    client = swarm_lab.manager.client
    spec = rail_stack.RailClusterSpec(image=swarm_lab.image, tls_dir=make_certs(tmp_path / "tls"), domains=2, gpus=2,
                                      elements=3000, repeats=2, domain_nodes=("innet-n2", "innet-n3"), deadline=300)
    try:
        rail_stack.deploy(client, spec, docker_host=swarm_lab.manager.docker_host)
        docs = rail_stack.wait_results(client, spec, 420, progress=print)
        job = stack.job_document(client, spec.name)
        rows = stack.task_rows(client, spec.name)
    finally:
        gone = stack.remove(client, spec.name, docker_host=swarm_lab.manager.docker_host,
                            node_clients=tuple(n.client for n in swarm_lab.nodes[1:]))
    print(docs, gone)
    assert job is not None and (job["workload"], job["rails"], job["domains"], job["k"]) == ("rail", ["r1", "r2"], 2, 256)
    assert [(d["rank"], d["domain"], d["gpu"], d["ok"], d["epoch"]) for d in docs] == [
        (0, 1, 1, True, job["epoch"]), (1, 1, 2, True, job["epoch"]), (2, 2, 1, True, job["epoch"]),
        (3, 2, 2, True, job["epoch"])]
    assert all(len(d["times"]) == 2 for d in docs)  # both timed operations exact, the first too
    assert [d["node"] for d in docs] == ["innet-n2", "innet-n2", "innet-n3", "innet-n3"]
    placed = {(r["service"], r["node"]) for r in rows if r["state"] in ("running", "complete")}
    assert {node for service, node in placed if service.startswith("rail")} == {"innet-n1"}
    assert {service for service, _ in placed} >= {"rail1", "rail2", "controller"}
    hb = {d["domain"]: {p[0] for p in d["hb_peers"]} for d in docs}
    assert not hb[1] & hb[2]  # each domain's HB peers are addresses of its own network
    assert swarm_lab.wait_clean() == []
