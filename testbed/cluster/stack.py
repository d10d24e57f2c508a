"""Deploy, watch and remove innet's stack (``docker-stack.yml``) on the Swarm that the local
Docker engine (or ``DOCKER_HOST``) belongs to.

``docker stack deploy`` is the docker CLI's (the SDK has no stacks), everything else goes
through the SDK: services of the stack carry ``com.docker.stack.namespace=<name>``, their
tasks say where they run, and the workers' ``INNET_RESULT`` lines come from the service
logs, which Swarm gathers from every node (no volume spans machines).

The documents read here (result lines, the controller's job, the nodes' status) are JSON
messages between the stack's tasks and this side, and are handed on as the dicts they
were printed as: the readers (``innet cluster``, ``innet bench cluster``) print, save or
type them (:meth:`innet.testbed.luwu.records.TrainerFinal.from_json`).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from innet.testbed.cluster.roles import JOB_TAG, RESULT_TAG, WORKLOADS
from innet.testbed.core.paths import REPO

STACK_FILE = REPO / "docker-stack.yml"
NAMESPACE = "com.docker.stack.namespace"
SWITCH_LABEL = "innet.switch"
WORKER_LABEL = "innet.worker"
NODE_LABEL = "innet.node"
FAILED_STATES = ("failed", "rejected")

DockerService = Any
"""A docker SDK ``Service`` (the SDK ships no type information)."""


class ClusterError(RuntimeError):
    """The stack could not be deployed, did not finish, or failed (names what and why)."""


@dataclass(frozen=True)
class ClusterSpec:
    """One deployment of the stack."""

    name: str = "innet"
    """Stack name (prefix of its services, network and secrets)."""
    image: str = "innet:latest"
    """Image every service runs, as the nodes pull it (``<registry>/innet:<key>``)."""
    workers: int = 2
    """Worker replicas (ranks, switch ports)."""
    elements: int = 4096
    """int32 elements of each worker's exact allreduce."""
    train_steps: int = 30
    """Demo training steps after the allreduce (0: none)."""
    overlay_mtu: int = 1450
    """MTU of the overlay (VXLAN adds 50 bytes to the underlay's 1500); sets the job's K."""
    tls_dir: Path | None = None
    """Directory with the TLS files (:func:`innet.testbed.cluster.certs.make_certs`); None: plaintext."""
    deadline: float = 300.0
    """Seconds each task waits for another."""
    max_per_node: int = 32
    """Worker tasks at most on one node."""
    repeats: int = 0
    """Timed allreduces per worker instead of the exact run (``innet bench cluster``); 0: none."""
    collective: str = "ina"
    """``ina`` or ``gloo`` (with ``repeats``; the image must carry torch: :mod:`~innet.testbed.cluster.torch_image`)."""
    workload: str = "demo"
    """``demo`` (exact allreduce, demo training) or ``luwu`` (LuWu training with ``nodes``
    optimizer nodes as the ``node`` service, pinned beside the switch) or ``ddp`` (torchrun in the
    worker tasks, DDP's gradients through the switch) or ``ddp-gloo`` (DDP + gloo on LuWu's
    model and steps, timed); all but ``demo`` need the torch image."""
    nodes: int = 1
    """LuWu optimizer nodes (``luwu`` only)."""
    lr: float = 0.003
    """LuWu's Adam learning rate."""
    hold_controller: bool = False
    """Deploy the controller scaled to 0, so that nothing attaches the job until
    :func:`release_controller`: a fault can then land while the workers wait, at a known point."""
    rejoin: bool = False
    """The controller stays up and starts a new worker set (a new epoch of both jobs, the
    training's parameters reloaded) when a worker task starts again in a slot that already
    started (Swarm replaced it); the workers then run again at the new epoch."""
    hold: tuple[int, int] | None = None
    """(slot, step): the first task of that worker slot stops after that training step and
    waits to be killed, so a fault lands mid-training at a known step (with ``rejoin``)."""

    def __post_init__(self) -> None:
        if not 2 <= self.workers <= 32:
            raise ClusterError(f"--workers {self.workers}: must be within 2..32 (switch ports of innet.p4's star)")
        if self.collective not in ("ina", "gloo") or (self.collective == "gloo" and self.repeats < 1):
            raise ClusterError(f"collective {self.collective!r}: ina, or gloo with repeats >= 1")
        if self.workload not in WORKLOADS or not 1 <= self.nodes <= 8 \
                or self.workers + (self.nodes if self.workload == "luwu" else 0) > 32:
            raise ClusterError(f"workload {self.workload!r} with {self.nodes} nodes and {self.workers} workers: "
                               f"{', '.join(WORKLOADS)}, 1..8 nodes, workers + nodes within 32 switch ports")
        if not self.name.replace("-", "").replace("_", "").isalnum():
            raise ClusterError(f"--name {self.name!r}: letters, digits, - and _ only (a stack name)")
        if self.rejoin and (self.workload not in ("demo", "luwu") or self.repeats):
            raise ClusterError(f"rejoin with workload {self.workload!r} and {self.repeats} repeats: rejoining "
                               "covers the exact demo run and LuWu training (workload demo or luwu, no repeats)")
        if self.hold is not None and (not self.rejoin or not 1 <= self.hold[0] <= self.workers
                                      or not 0 <= self.hold[1] < self.train_steps):
            raise ClusterError(f"hold {self.hold}: needs rejoin, a slot within 1..{self.workers} and a step "
                               f"within 0..{self.train_steps - 1}")

    def env(self) -> dict[str, str]:
        """The stack file's variables."""
        return {"INNET_IMAGE": self.image, "INNET_WORKERS": str(self.workers), "INNET_ELEMENTS": str(self.elements),
                "INNET_TRAIN_STEPS": str(self.train_steps), "INNET_OVERLAY_MTU": str(self.overlay_mtu),
                "INNET_DEADLINE": str(int(self.deadline)), "INNET_MAX_PER_NODE": str(self.max_per_node),
                "INNET_REPEATS": str(self.repeats), "INNET_COLLECTIVE": self.collective,
                "INNET_WORKLOAD": self.workload, "INNET_NODES": str(self.nodes), "INNET_LR": repr(self.lr),
                "INNET_NODE_REPLICAS": str(self.nodes if self.workload == "luwu" else 0),
                "INNET_CONTROLLER_REPLICAS": "0" if self.hold_controller else "1",
                "INNET_TLS": "on" if self.tls_dir else "off",
                "INNET_REJOIN": "on" if self.rejoin else "off",
                "INNET_HOLD": f"{self.hold[0]}:{self.hold[1]}" if self.hold else "",
                "INNET_TLS_DIR": str(self.tls_dir) if self.tls_dir else str(_plaintext_dir())}


def _plaintext_dir() -> Path:
    """Placeholder secret files for a plaintext stack (the file's secrets must exist; unused)."""
    path = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "innet" / "cluster-plaintext"
    path.mkdir(parents=True, exist_ok=True)
    for name in ("ca.crt", "switch.crt", "switch.key", "client.crt", "client.key"):
        (path / name).write_text("unused: P4Runtime in plaintext\n")  # Swarm refuses an empty secret
    return path


def _docker(args: list[str], env: dict[str, str] | None = None, timeout: float = 300.0) -> str:
    try:
        out = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, **(env or {})})
    except FileNotFoundError:
        raise ClusterError("the docker CLI is not installed (Debian: apt-get install docker.io)") from None
    except subprocess.TimeoutExpired:
        raise ClusterError(f"docker {' '.join(args[:3])}: no answer within {timeout:g} s") from None
    if out.returncode != 0:
        raise ClusterError(f"docker {' '.join(args[:3])}: {(out.stderr.strip() or out.stdout.strip())[-400:]}")
    return out.stdout


def check_nodes(client: Any) -> dict[str, list[str]]:
    """Nodes labelled for the switch and for workers; ClusterError saying how to label them."""
    try:
        nodes = client.nodes.list()
    except Exception as error:  # docker.errors.APIError: not a manager
        raise ClusterError(f"this Docker engine is not a Swarm manager ({str(error)[-200:]}); run "
                           "`docker swarm init` here or point DOCKER_HOST at a manager") from None
    found: dict[str, list[str]] = {SWITCH_LABEL: [], WORKER_LABEL: []}
    for node in nodes:
        labels = node.attrs.get("Spec", {}).get("Labels", {}) or {}
        name = node.attrs.get("Description", {}).get("Hostname", node.id)
        for label in found:
            if labels.get(label) == "true" and node.attrs.get("Spec", {}).get("Availability") == "active":
                found[label].append(name)
    for label, names in found.items():
        if not names:
            raise ClusterError(f"no active node is labelled {label}=true; label one with "
                               f"`docker node update --label-add {label}=true NODE` "
                               f"(and {NODE_LABEL}=NODE for spreading workers)")
    return found


def label_node(client: Any, hostname: str, key: str, value: str | None) -> None:
    """Set (or with None remove) node label ``key`` of the swarm node ``hostname``."""
    for node in client.nodes.list():
        if node.attrs.get("Description", {}).get("Hostname") == hostname:
            spec = node.attrs["Spec"]
            labels = dict(spec.get("Labels") or {})
            if value is None:
                labels.pop(key, None)
            else:
                labels[key] = value
            spec["Labels"] = labels
            node.update(spec)
            return
    raise ClusterError(f"no swarm node {hostname!r} (nodes: "
                       f"{sorted(n.attrs.get('Description', {}).get('Hostname', n.id) for n in client.nodes.list())})")


def _cli_env(docker_host: str | None) -> dict[str, str]:
    return {"DOCKER_HOST": docker_host} if docker_host else {}


def deploy(client: Any, spec: ClusterSpec, docker_host: str | None = None) -> None:
    """``docker stack deploy`` of the stack file with ``spec``'s variables (the CLI talks to
    ``docker_host``, default: its environment's engine, which must be ``client``'s)."""
    deploy_file(client, STACK_FILE, spec.name, spec.env(), docker_host)


def deploy_file(client: Any, path: Path, name: str, env: dict[str, str], docker_host: str | None = None) -> None:
    """``docker stack deploy`` of the stack file ``path`` as stack ``name`` with the variables ``env``."""
    check_nodes(client)
    _docker(["stack", "deploy", "--prune", "--resolve-image", "never", "-c", str(path), name],
            env={**env, **_cli_env(docker_host)})


def release_controller(client: Any, name: str) -> None:
    """Start the controller of a stack deployed with ``hold_controller``."""
    controller = services(client, name).get("controller")
    if controller is None:
        raise ClusterError(f"stack {name!r} has no controller service")
    controller.scale(1)


def services(client: Any, name: str) -> dict[str, DockerService]:
    """The stack's services by short name (``worker``, not ``innet_worker``)."""
    import docker.errors

    try:
        found = client.services.list(filters={"label": f"{NAMESPACE}={name}"})
    except docker.errors.APIError as error:
        raise ClusterError(f"this Docker engine is not a Swarm manager ({error.explanation or error}); run "
                           "`docker swarm init` here or point DOCKER_HOST at a manager") from None
    return {s.name.removeprefix(f"{name}_"): s for s in found}


def tagged(service: Any, tag: str) -> list[dict[str, Any]]:
    """The JSON documents a service's tasks printed after ``tag``."""
    docs = []
    for chunk in service.logs(stdout=True, stderr=False, timestamps=False):
        for line in chunk.decode(errors="replace").splitlines():
            _, sep, rest = line.partition(f"{tag} ")
            if sep and rest.startswith("{"):
                try:
                    docs.append(json.loads(rest))
                except json.JSONDecodeError:
                    pass
    return docs


def task_rows(client: Any, name: str) -> list[dict[str, str]]:
    """One row per task: service, slot, node, state, message."""
    found = services(client, name)
    nodes = {n.id: n.attrs.get("Description", {}).get("Hostname", n.id) for n in client.nodes.list()}
    rows = []
    for short, service in sorted(found.items()):
        for task in service.tasks():
            status = task.get("Status", {})
            rows.append({"service": short, "slot": str(task.get("Slot", "")), "node": nodes.get(task.get("NodeID", ""), "-"),
                         "state": status.get("State", "?"), "desired": task.get("DesiredState", "?"),
                         "message": (status.get("Err") or status.get("Message") or "")[:60]})
    return rows


def results(client: Any, name: str) -> list[dict[str, Any]]:
    """The workers' result documents (the ``worker`` service's, or a rail stack's ``gpu-*``
    services'), latest per rank."""
    by_rank: dict[int, dict[str, Any]] = {}
    for short, service in sorted(services(client, name).items()):
        if short == "worker" or short.startswith("gpu-"):
            for doc in tagged(service, RESULT_TAG):
                by_rank[int(doc["rank"])] = doc
    return [by_rank[r] for r in sorted(by_rank)]


def node_results(client: Any, name: str) -> list[dict[str, Any]]:
    """The LuWu optimizer nodes' status documents, latest per node."""
    from innet.testbed.cluster.luwu_roles import NODE_RESULT_TAG

    service = services(client, name).get("node")
    by_index = {int(doc["index"]): doc for doc in tagged(service, NODE_RESULT_TAG)} if service is not None else {}
    return [by_index[i] for i in sorted(by_index)]


def wait_node_results(client: Any, spec: ClusterSpec, deadline: float = 60.0) -> list[dict[str, Any]]:
    """The LuWu nodes' status documents once every node printed its own (a node reports after
    its last broadcast, possibly after the workers); as far as they got by the deadline."""
    end = time.monotonic() + deadline
    while len(docs := node_results(client, spec.name)) < spec.nodes and time.monotonic() < end:
        time.sleep(1.0)
    return docs


def job_document(client: Any, name: str) -> dict[str, Any] | None:
    """The job JSON document the controller printed last (None before it printed one)."""
    controller = services(client, name).get("controller")
    docs = tagged(controller, JOB_TAG) if controller is not None else []
    return docs[-1] if docs else None


def wait_results(client: Any, spec: ClusterSpec, deadline: float,
                 progress: Callable[[str], None] = lambda _: None) -> list[dict[str, Any]]:
    """The workers' result documents (JSON, as :func:`results`) once every rank reported (or a
    task failed for good, or the deadline passed)."""
    end = time.monotonic() + deadline
    said = ""
    while True:
        docs = results(client, spec.name)
        if len(docs) == spec.workers:
            return docs
        rows = task_rows(client, spec.name)
        failed = [r for r in rows if r["state"] in FAILED_STATES and r["desired"] == "shutdown"]
        states = ", ".join(f"{s}:{sum(1 for r in rows if r['state'] == s)}"
                           for s in sorted({r["state"] for r in rows}))
        line = f"{len(docs)}/{spec.workers} workers reported; tasks {states}"
        if line != said:
            progress(line)
            said = line
        worker_failures = [r for r in failed if r["service"] in ("worker", "controller")]
        if len(worker_failures) >= 3:
            raise ClusterError(f"stack {spec.name}: tasks failed: " + "; ".join(
                f"{r['service']}.{r['slot']} on {r['node']}: {r['message']}" for r in worker_failures[:3]))
        if time.monotonic() > end:
            raise ClusterError(f"stack {spec.name}: {len(docs)} of {spec.workers} workers reported within "
                               f"{deadline:g} s (tasks {states}); see `innet cluster logs --name {spec.name}`")
        time.sleep(1.0)


def service_logs(client: Any, name: str, service: str, tail: int = 50) -> str:
    found = services(client, name)
    if service not in found:
        raise ClusterError(f"stack {name}: no service {service!r} (services: {sorted(found) or 'none'})")
    chunks = found[service].logs(stdout=True, stderr=True, timestamps=False, tail=tail)
    return b"".join(chunks).decode(errors="replace")


def remove(client: Any, name: str, deadline: float = 120.0, docker_host: str | None = None,
           node_clients: tuple[Any, ...] = ()) -> list[str]:
    """``docker stack rm`` and wait until its services, networks and containers are gone; what went.

    Swarm (dockerd 20.10) may leave exited task containers on a node for a while after the
    service is gone: those of this stack are removed here, on the engine of ``client`` and of
    ``node_clients`` (other nodes' engines, when reachable)."""
    gone = sorted(services(client, name))
    last = ""
    if not gone and not client.networks.list(filters={"label": f"{NAMESPACE}={name}"}):
        return []
    end = time.monotonic() + deadline
    while True:
        try:  # again while a network is still "in use" by a task that is stopping
            _docker(["stack", "rm", name], env=_cli_env(docker_host))
        except ClusterError as error:
            if time.monotonic() > end:
                raise
            last = str(error)
        label = {"label": f"{NAMESPACE}={name}"}
        if not services(client, name) and not client.networks.list(filters=label):
            gone += _remove_exited(name, (client, *node_clients))
            if not any(c.containers.list(all=True, filters=label) for c in (client, *node_clients)):
                break
        if time.monotonic() > end:
            raise ClusterError(f"stack {name}: services or networks still present {deadline:g} s after `stack rm`"
                               + (f" ({last})" if last else ""))
        time.sleep(1.0)
    return [g if g.startswith("removed") else f"removed service {name}_{g}" for g in gone]


def _remove_exited(name: str, clients: tuple[Any, ...]) -> list[str]:
    """Exited task containers of stack ``name`` on those engines."""
    import docker.errors

    done = []
    for engine in clients:
        for container in engine.containers.list(all=True, filters={"label": f"{NAMESPACE}={name}",
                                                                    "status": "exited"}):
            try:
                container.remove()
                done.append(f"removed exited container {container.name}")
            except docker.errors.APIError:
                pass  # still being stopped: the next round
    return done
