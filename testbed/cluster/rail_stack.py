"""Rail-only on a Docker Swarm: one rail switch service per rail, each HB domain an overlay
network of its own, one service per GPU.

    spec = RailClusterSpec(image=..., domains=2, gpus=2, domain_nodes=("innet-n2", "innet-n3"))
    deploy(client, spec, docker_host=...)        # then wait_results(client, spec, 300)

The topology is :func:`innet.testbed.core.topology.rail_only` (``domains`` HB domains of
``gpus`` GPUs; rail switch ``r<G>`` has GPU ``d<D>g<G>`` on its port ``D``), and everything that
runs on it is the rail testbed's own: the controller installs
:func:`innet.testbed.rail.grid.hierarchical_jobs` (one job id, a shard per rail), and each GPU
task runs :func:`innet.testbed.rail.worker.run` with a :class:`~innet.testbed.rail.worker.RailPlan`
(reduce-scatter in the HB domain, INA on its rail switch, all-gather), which checks every
element against the wrapping sum of all GPUs' integers. What the swarm changes is only where
things are and how they are reached:

* ``rail<G>``: ``innet-switch`` with one UDP port per domain (frame tunnel, as the star's
  switch service), P4Runtime over mutual TLS with the stack's secrets; pinned by the
  ``innet.switch`` label, reached by name over the ``fabric`` overlay (the NIC domain);
* ``hb<D>``: an overlay network per HB domain, which only that domain's GPU services join,
  each under the alias ``hb-d<D>-g<G>`` (an alias is per network, so the name resolves to the
  HB address): the domain's reduce-scatter and all-gather never touch ``fabric``. With
  ``domain_nodes`` every GPU of a domain runs on that node, as an HB domain is one server;
* ``gpu-d<D>-g<G>``: one replica; waits until its rail switch has the job attached, then runs;
* ``controller``: one-shot, pushes ``innet.p4`` and the forwarding to every rail switch,
  creates the sharded job and attaches it (one epoch on every rail).

The stack file is written from :func:`stack_document` (JSON, which ``docker stack deploy``
reads as YAML) next to the TLS files, and deployed with the same CLI call as the star's stack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from innet.testbed.cluster.stack import SWITCH_LABEL, WORKER_LABEL, ClusterError

ROLES_MODULE = "innet.testbed.cluster.rail_roles"
SECRET_FILES = {"innet_ca": "ca.crt", "innet_switch_crt": "switch.crt", "innet_switch_key": "switch.key",
                "innet_client_crt": "client.crt", "innet_client_key": "client.key"}
SWITCH_SECRETS = ("innet_ca", "innet_switch_crt", "innet_switch_key")
CLIENT_SECRETS = ("innet_ca", "innet_client_crt", "innet_client_key")


@dataclass(frozen=True)
class RailClusterSpec:
    """One deployment of the rail-only stack."""

    image: str
    """Image every service runs, as the nodes pull it."""
    tls_dir: Path
    """TLS files (:func:`innet.testbed.cluster.certs.make_certs`)."""
    name: str = "innetrail"
    domains: int = 2
    """HB domains (y): workers of each rail's job."""
    gpus: int = 2
    """GPUs per domain (x): rails, one switch service each."""
    elements: int = 4096
    """int32 elements of each GPU's allreduce."""
    repeats: int = 2
    """Timed allreduces after the first (every one checked exactly)."""
    overlay_mtu: int = 1450
    """MTU of the overlays (K follows it, as in the star's stack)."""
    domain_nodes: tuple[str, ...] = ()
    """Swarm node (host name) of each HB domain's GPUs; empty: any node labelled innet.worker."""
    deadline: float = 300.0

    def __post_init__(self) -> None:
        if not 2 <= self.domains <= 8 or not 2 <= self.gpus <= 8:
            raise ClusterError(f"rail stack of {self.domains} domains x {self.gpus} GPUs: each within 2..8")
        if self.domain_nodes and len(self.domain_nodes) != self.domains:
            raise ClusterError(f"domain_nodes {self.domain_nodes}: one swarm node per HB domain ({self.domains})")
        if not 1 <= self.elements <= 1 << 22 or self.repeats < 0:
            raise ClusterError(f"elements {self.elements}, repeats {self.repeats}: 1..4194304 elements, repeats >= 0")
        if not self.name.replace("-", "").replace("_", "").isalnum():
            raise ClusterError(f"--name {self.name!r}: letters, digits, - and _ only (a stack name)")

    def env(self) -> dict[str, str]:
        """What every task reads (:class:`~innet.testbed.cluster.rail_roles.RailRoleConfig`)."""
        return {"INNET_RAIL_DOMAINS": str(self.domains), "INNET_RAIL_GPUS": str(self.gpus),
                "INNET_ELEMENTS": str(self.elements), "INNET_REPEATS": str(self.repeats),
                "INNET_OVERLAY_MTU": str(self.overlay_mtu), "INNET_DEADLINE": str(int(self.deadline)),
                "INNET_TLS": "on", "INNET_TLS_DIR": "/run/secrets", "INNET_NODE": "{{.Node.Hostname}}"}


def _service(spec: RailClusterSpec, role: str, secrets: tuple[str, ...], constraint: str,
             networks: Any, env: dict[str, str] | None = None, restart: str = "on-failure") -> dict[str, Any]:
    return {"image": spec.image, "command": ["python", "-m", ROLES_MODULE, role],
            "environment": {**spec.env(), **(env or {})}, "networks": networks,
            "secrets": [{"source": s, "target": s, "uid": "10001", "mode": 0o400} for s in secrets],
            "deploy": {"endpoint_mode": "dnsrr", "replicas": 1, "placement": {"constraints": [constraint]},
                       "restart_policy": {"condition": restart, "delay": "2s",
                                          **({"max_attempts": 3} if restart == "on-failure" else {})}}}


def stack_document(spec: RailClusterSpec) -> dict[str, Any]:
    """The compose document of ``spec``'s stack (module docstring)."""
    on_switch = f"node.labels.{SWITCH_LABEL} == true"
    services: dict[str, Any] = {}
    for g in range(1, spec.gpus + 1):
        services[f"rail{g}"] = _service(spec, "switch", SWITCH_SECRETS, on_switch, ["fabric"], {"INNET_RAIL": str(g)},
                                        restart="any")
    services["controller"] = _service(spec, "controller", CLIENT_SECRETS, on_switch, ["fabric"])
    for d in range(1, spec.domains + 1):
        where = (f"node.hostname == {spec.domain_nodes[d - 1]}" if spec.domain_nodes
                 else f"node.labels.{WORKER_LABEL} == true")
        for g in range(1, spec.gpus + 1):
            services[f"gpu-d{d}-g{g}"] = _service(
                spec, "gpu", CLIENT_SECRETS, where, {"fabric": {}, f"hb{d}": {"aliases": [hb_alias(d, g)]}},
                {"INNET_DOMAIN": str(d), "INNET_GPU": str(g)})
    mtu = {"com.docker.network.driver.mtu": str(spec.overlay_mtu)}
    networks = {"fabric": {"driver": "overlay", "driver_opts": mtu, "labels": {"org.innet.component": "fabric"}}}
    networks.update({f"hb{d}": {"driver": "overlay", "driver_opts": mtu, "labels": {"org.innet.component": "hb"}}
                     for d in range(1, spec.domains + 1)})
    secrets = {name: {"file": str(spec.tls_dir / file)} for name, file in SECRET_FILES.items()}
    return {"version": "3.9", "services": services, "networks": networks, "secrets": secrets}


def hb_alias(domain: int, gpu: int) -> str:
    """The name of GPU ``d<domain>g<gpu>`` on its HB domain's network (1-based)."""
    return f"hb-d{domain}-g{gpu}"


def deploy(client: Any, spec: RailClusterSpec, docker_host: str | None = None) -> Path:
    """Write the stack file beside the TLS files and ``docker stack deploy`` it; its path."""
    from innet.testbed.cluster import stack

    path = spec.tls_dir / f"{spec.name}-stack.yml"
    path.write_text(json.dumps(stack_document(spec), indent=1) + "\n")
    stack.deploy_file(client, path, spec.name, {}, docker_host)
    return path


def results(client: Any, name: str) -> list[dict[str, Any]]:
    """The GPU tasks' result documents, latest per global rank."""
    from innet.testbed.cluster.stack import results as stack_results

    return stack_results(client, name)


def wait_results(client: Any, spec: RailClusterSpec, deadline: float,
                 progress: Callable[[str], None] = lambda _: None) -> list[dict[str, Any]]:
    """The GPU tasks' result documents (JSON) once every GPU reported (or a task failed for
    good, or the deadline passed)."""
    import time

    from innet.testbed.cluster.stack import FAILED_STATES, task_rows

    end = time.monotonic() + deadline
    want = spec.domains * spec.gpus
    said = ""
    while True:
        docs = results(client, spec.name)
        if len(docs) == want:
            return docs
        rows = task_rows(client, spec.name)
        failed = [r for r in rows if r["state"] in FAILED_STATES and r["desired"] == "shutdown"
                  and not r["service"].startswith("rail")]
        line = f"{len(docs)}/{want} GPUs reported; tasks " + ", ".join(
            f"{s}:{sum(1 for r in rows if r['state'] == s)}" for s in sorted({r["state"] for r in rows}))
        if line != said:
            progress(line)
            said = line
        if len(failed) >= 3 or time.monotonic() > end:
            raise ClusterError(f"rail stack {spec.name}: {len(docs)} of {want} GPUs reported within {deadline:g} s"
                               + "".join(f"; {r['service']} on {r['node']}: {r['message']}" for r in failed[:3])
                               + f" (see `innet cluster logs --name {spec.name} SERVICE`)")
        time.sleep(1.0)
