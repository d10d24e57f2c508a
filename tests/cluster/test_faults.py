"""Faults on the 3-node swarm: a node drained (``docker node update --availability drain``)
while its worker tasks wait for the job; Swarm moves them to the other nodes with their task
slots, hence their ranks, and the allreduce and training still complete exactly.

The stack is deployed with its controller held (scaled to 0), so the drain lands while the
workers wait for the job, and the controller is started after it.

A worker task killed mid-training (held at a known step, ``ClusterSpec.hold``): Swarm replaces
it, the controller (``ClusterSpec.rejoin``: it stays up) attaches a new worker set, and all ranks
allreduce and train exactly at the new epoch. The same for LuWu's training: the optimizer node
starts again from the initial parameters with the new set, and every rank's losses equal the
Mininet star's run without a fault."""

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


HOLD_SLOT = 2
HOLD_STEP = 1


def _kill_task(swarm_lab: Any, spec_name: str, slot: int, service: str = "worker") -> str:
    """``docker kill`` of the running container of ``service``'s ``slot``, on its node's dockerd: the node."""
    from innet.testbed.cluster import stack

    client = swarm_lab.manager.client
    hostnames = {n.id: n.attrs["Description"]["Hostname"] for n in client.nodes.list()}
    for task in stack.services(client, spec_name)[service].tasks():
        status = task.get("Status", {})
        if task.get("Slot") == slot and status.get("State") == "running":
            hostname = hostnames[task["NodeID"]]
            node = next(n for n in swarm_lab.nodes if n.name == hostname)
            node.client.containers.get(status["ContainerStatus"]["ContainerID"]).kill()
            return hostname
    raise AssertionError(f"no running task in {service} slot {slot}")


def _assert_exact_at(docs: list[dict[str, Any]], epoch: int) -> None:
    """Every rank's sum and training exact (the numpy model's digests), all at ``epoch``."""
    from innet.testbed.ina.compose import ComposeConfig, digest, expected_sum, expected_training

    want_sum = digest(expected_sum(WORKERS, 1024))
    want_train = digest(expected_training(ComposeConfig(workers=WORKERS, train_steps=TRAIN_STEPS, k=256)))
    assert [(d["rank"], d["ok"], d["sha256"], d["epoch"]) for d in docs] == \
        [(r, True, want_sum, epoch) for r in range(WORKERS)]
    assert [(d["train"]["bit_exact"], d["train"]["sha256"]) for d in docs] == [(True, want_train)] * WORKERS


def _deploy_held(swarm_lab: Any, spec: Any) -> dict[str, Any]:
    """Deploy ``spec`` and wait until its held worker stopped: the controller's job document."""
    from innet.testbed.cluster import stack
    from innet.testbed.cluster.roles import HELD_TAG

    client = swarm_lab.manager.client
    stack.deploy(client, spec, docker_host=swarm_lab.manager.docker_host)
    end = time.monotonic() + 300
    while not stack.tagged(stack.services(client, spec.name)["worker"], HELD_TAG):
        assert time.monotonic() < end, f"worker slot {spec.hold[0]} not held: {stack.task_rows(client, spec.name)}"
        time.sleep(1.0)
    first = stack.job_document(client, spec.name)
    assert first is not None and stack.results(client, spec.name) == []
    return first


def test_killed_worker_is_replaced_and_rejoins_with_a_new_epoch(swarm_lab: Any, tmp_path: Path) -> None:
    """Worker slot ``HOLD_SLOT`` stops after training step ``HOLD_STEP`` (the others wait in the
    next step for its contribution) and its container is killed there; Swarm starts a new task
    in the slot, the controller attaches a new worker set, and every worker's allreduce and
    training at the new epoch are exact."""
    from innet.testbed.cluster import stack
    from innet.testbed.cluster.certs import make_certs
    from innet.testbed.cluster.roles import REJOIN_TAG

    client = swarm_lab.manager.client
    spec = stack.ClusterSpec(name="innetrejoin", image=swarm_lab.image, workers=WORKERS, elements=1024,
                             train_steps=TRAIN_STEPS, tls_dir=make_certs(tmp_path / "tls"), deadline=240,
                             rejoin=True, hold=(HOLD_SLOT, HOLD_STEP))
    try:
        first = _deploy_held(swarm_lab, spec)
        killed_on = _kill_task(swarm_lab, spec.name, HOLD_SLOT)
        docs = stack.wait_results(client, spec, 360, progress=print)
        rejoins = stack.tagged(stack.services(client, spec.name)["controller"], REJOIN_TAG)
        rows = stack.task_rows(client, spec.name)
    finally:
        stack.remove(client, spec.name, docker_host=swarm_lab.manager.docker_host,
                     node_clients=tuple(n.client for n in swarm_lab.nodes[1:]))
    assert [r["slot"] for r in rejoins] == [HOLD_SLOT], rejoins
    new_epoch = rejoins[0]["epoch"]
    assert new_epoch > first["epoch"]
    _assert_exact_at(docs, new_epoch)
    slot_tasks = [r for r in rows if r["service"] == "worker" and r["slot"] == str(HOLD_SLOT)]
    assert len(slot_tasks) == 2 and sum(r["state"] == "failed" for r in slot_tasks) == 1, \
        f"worker slot {HOLD_SLOT} (killed on {killed_on}): {slot_tasks}"


def test_killed_luwu_worker_rejoins_and_trains_as_on_the_star(swarm_lab: Any, luwu_star_run: Any,
                                                              tmp_path: Path) -> None:
    """LuWu worker slot 2 of 4 stops after step 1 of 6 (the others and the optimizer node wait
    for its gradient) and is killed there; Swarm replaces it, the controller attaches a new set,
    the node (its old run stopped as the new epoch appears) and every worker train again from
    the start, and every rank's loss at every step equals the star's run without a fault."""
    from innet.testbed.cluster import stack
    from innet.testbed.cluster.certs import make_certs
    from innet.testbed.cluster.roles import REJOIN_TAG

    if not swarm_lab.torch:
        pytest.skip("torch is not installed on the host: no torch image for LuWu's trainers")
    client = swarm_lab.manager.client
    workers, steps = len(luwu_star_run.losses), len(luwu_star_run.losses[0])  # the star run's
    spec = stack.ClusterSpec(name="innetluwurejoin", image=swarm_lab.image, workers=workers, workload="luwu",
                             nodes=1, train_steps=steps, tls_dir=make_certs(tmp_path / "tls"), deadline=240,
                             rejoin=True, hold=(2, 1))
    try:
        first = _deploy_held(swarm_lab, spec)
        _kill_task(swarm_lab, spec.name, 2)
        docs = stack.wait_results(client, spec, 420, progress=print)
        nodes = stack.wait_node_results(client, spec)
        rejoins = stack.tagged(stack.services(client, spec.name)["controller"], REJOIN_TAG)
    finally:
        for service in ("controller", "node", "worker"):  # shown when the test fails
            print(f"--- {service}:\n{stack.service_logs(client, spec.name, service, tail=60)}")
        stack.remove(client, spec.name, docker_host=swarm_lab.manager.docker_host,
                     node_clients=tuple(n.client for n in swarm_lab.nodes[1:]))
    assert [r["slot"] for r in rejoins] == [2], rejoins
    new_epoch = rejoins[0]["epoch"]
    assert new_epoch > first["epoch"]
    assert [(d["rank"], d["ok"], d["epoch"]) for d in docs] == [(r, True, new_epoch) for r in range(workers)]
    assert [d["losses"] for d in docs] == luwu_star_run.losses
    assert [d["accuracy"] for d in docs] == [f.accuracy for f in luwu_star_run.finals]
    assert [(n["state"], n["step"]) for n in nodes] == [("done", steps)]


def test_rejoin_and_hold_options_reach_the_tasks_and_bad_ones_are_named() -> None:
    from innet.testbed.cluster import stack
    from innet.testbed.cluster.roles import ClusterRoleConfig
    from innet.testbed.ina.compose import ComposeError

    spec = stack.ClusterSpec(workers=4, train_steps=3, rejoin=True, hold=(2, 1))
    config = ClusterRoleConfig.from_env({**spec.env(), "INNET_SLOT": "2"})
    assert (config.rejoin, config.hold) == (True, (2, 1))
    assert (ClusterRoleConfig.from_env(stack.ClusterSpec().env()).rejoin,
            ClusterRoleConfig.from_env(stack.ClusterSpec().env()).hold) == (False, None)
    with pytest.raises(stack.ClusterError, match=r"hold \(2, 3\): needs rejoin.*step within 0..2"):
        stack.ClusterSpec(workers=4, train_steps=3, rejoin=True, hold=(2, 3))
    with pytest.raises(stack.ClusterError, match="rejoin with workload 'ddp'"):
        stack.ClusterSpec(workers=4, workload="ddp", rejoin=True)
    assert stack.ClusterSpec(workers=4, workload="luwu", train_steps=6, rejoin=True, hold=(2, 1)).env()["INNET_REJOIN"] == "on"
    with pytest.raises(stack.ClusterError, match="needs rejoin"):
        stack.ClusterSpec(workers=4, train_steps=3, hold=(2, 1))
    with pytest.raises(ComposeError, match="INNET_HOLD='2': expected slot:step"):
        ClusterRoleConfig.from_env({"INNET_HOLD": "2"})


def test_restarted_switch_gets_pipeline_and_jobs_again_and_workers_resume(swarm_lab: Any, tmp_path: Path) -> None:
    """The switch task killed while the workers train (slot ``HOLD_SLOT`` held after step
    ``HOLD_STEP``): Swarm starts a new switch task, the controller that stayed up pushes the
    pipeline, forwarding and both jobs again, and every worker runs again at the new epoch, exactly."""
    from innet.testbed.cluster import stack
    from innet.testbed.cluster.certs import make_certs
    from innet.testbed.cluster.roles import REPUSH_TAG

    client = swarm_lab.manager.client
    spec = stack.ClusterSpec(name="innetswitchrestart", image=swarm_lab.image, workers=WORKERS, elements=1024,
                             train_steps=TRAIN_STEPS, tls_dir=make_certs(tmp_path / "tls"), deadline=240,
                             rejoin=True, hold=(HOLD_SLOT, HOLD_STEP))
    try:
        first = _deploy_held(swarm_lab, spec)
        _kill_task(swarm_lab, spec.name, 1, service="switch")
        docs = stack.wait_results(client, spec, 360, progress=print)
        repushes = stack.tagged(stack.services(client, spec.name)["controller"], REPUSH_TAG)
        rows = stack.task_rows(client, spec.name)
    finally:
        stack.remove(client, spec.name, docker_host=swarm_lab.manager.docker_host,
                     node_clients=tuple(n.client for n in swarm_lab.nodes[1:]))
    assert [r["epoch"] for r in repushes] == [first["epoch"] + 1], repushes
    _assert_exact_at(docs, first["epoch"] + 1)
    switch_tasks = [r for r in rows if r["service"] == "switch"]
    assert len(switch_tasks) == 2 and sum(r["state"] == "failed" for r in switch_tasks) == 1, switch_tasks
    assert not [r for r in rows if r["service"] == "worker" and r["state"] == "failed"], rows
