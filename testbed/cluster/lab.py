"""A multi-node Docker Swarm on one machine, for tests and ``innet bench cluster``.

Each swarm node is its own ``dockerd`` (Debian's docker.io) in a network namespace this
module creates: own ``--data-root``, ``--exec-root``, ``--pidfile``, unix socket and UTS
name, its managed containerd, its own iptables and bridges, one veth to a host bridge of
its own (``10.213.X.0/24``). The nodes form a swarm with ``docker swarm join`` over those
addresses: manager traffic (2377/tcp), gossip (7946/tcp+udp) and VXLAN (4789/udp) cross the
bridge exactly as they would cross a switch between servers. Images come from Debian's
``docker-registry`` (distribution 2.8), run twice over one storage directory: read-write on
127.0.0.1 (the host engine pushes there, loopback needs no TLS) and read-only on the
bridge address the nodes pull from (``--insecure-registry``).

Why namespaces rather than docker-in-docker: no image has to exist before the swarm does
(docker-in-docker needs an image with dockerd, built from a registry-less base first), the
nodes' processes are visible and killable from the host, and a node is just a dockerd,
the same binary a user's server runs.

Node data roots are kept under ``/var/lib/innet-cluster/nodes`` between runs with the last
run's image only (its layers make the next pull short: 850 MB three times costs a minute on
two cores), and the registry's storage until it exceeds 4 GiB; every run leaves
the swarm, stops its daemons and deletes its namespaces, veths and bridge in ``finally``.
One lab at a time (a lock file).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

STATE_ROOT = Path("/var/lib/innet-cluster")
RUN_ROOT = Path("/run/innet-cluster")
REGISTRY_PORT = 5000
REGISTRY_KEEP = 4 << 30
"""Bytes of registry storage above which a lab starts with an empty registry."""
ADDR_POOL = "10.214.0.0/16"
"""Swarm's pool for overlay subnets: away from the lab's bridge and from Docker's 10.0.0.0/8 default."""


class LabError(RuntimeError):
    """The lab could not start (names the step, the node and why)."""


def _run(argv: list[str], what: str, timeout: float = 60.0) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise LabError(f"{what}: {error}") from None
    if out.returncode != 0:
        raise LabError(f"{what}: {(out.stderr.strip() or out.stdout.strip())[-300:]}")
    return out.stdout


def preconditions() -> str | None:
    """Why no lab can run here (None: it can)."""
    if os.geteuid() != 0:
        return "a swarm of dockerd nodes in network namespaces needs root"
    for binary, package in (("dockerd", "docker.io"), ("docker", "docker.io"), ("ip", "iproute2"),
                            ("unshare", "util-linux"), ("docker-registry", "docker-registry")):
        if shutil.which(binary) is None:
            return f"{binary} is not installed (apt-get install {package})"
    try:
        import docker  # noqa: F401
    except ImportError:
        return "the Docker SDK for Python is not installed (pip install 'innet[docker]')"
    return None


@dataclass(frozen=True)
class LabConfig:
    nodes: int = 3
    """Swarm nodes (the first is the manager)."""
    switch_nodes: tuple[int, ...] = (0,)
    """Nodes labelled innet.switch=true."""
    worker_nodes: tuple[int, ...] = (0, 1, 2)
    """Nodes labelled innet.worker=true."""
    start_deadline: float = 90.0
    """Seconds a dockerd may take to answer."""


@dataclass
class LabNode:
    index: int
    name: str
    netns: str
    veth: str
    address: str
    data_root: Path
    exec_root: Path
    socket: Path
    popen: subprocess.Popen[bytes] | None = None
    client: Any = None

    @property
    def docker_host(self) -> str:
        return f"unix://{self.socket}"


class SwarmLab:
    """``with SwarmLab() as lab:`` a running swarm; everything it made is gone afterwards."""

    def __init__(self, config: LabConfig = LabConfig(), progress: Callable[[str], None] = lambda _: None) -> None:
        reason = preconditions()
        if reason:
            raise LabError(reason)
        if config.nodes < 1 or any(i >= config.nodes for i in config.switch_nodes + config.worker_nodes):
            raise LabError(f"lab of {config.nodes} nodes: switch nodes {config.switch_nodes} and worker nodes "
                           f"{config.worker_nodes} must be within 0..{config.nodes - 1}")
        self.config = config
        self.progress = progress
        self.run_id = uuid.uuid4().hex[:5]
        self.run_dir = RUN_ROOT / self.run_id
        self.bridge = f"icl{self.run_id}br"
        self.subnet = self._free_subnet()
        self.gateway = f"{self.subnet}.1"
        self.nodes: list[LabNode] = []
        self.registries: list[subprocess.Popen[bytes]] = []
        self.push_port = 0
        self.image = ""
        """What the stack runs, as the nodes pull it (set once an image is pushed)."""
        self.torch = False
        """``image`` carries torch (:mod:`innet.testbed.cluster.torch_image`)."""
        self._lock: Any = None
        self._made: list[tuple[str, str]] = []

    # -- addresses --------------------------------------------------------------------

    @staticmethod
    def _free_subnet() -> str:
        used = _run(["ip", "-4", "-o", "addr"], "ip addr")
        for third in range(1, 250):
            prefix = f"10.213.{third}"
            if f" {prefix}." not in used:
                return prefix
        raise LabError("no free 10.213.N.0/24 for the lab bridge")

    def _accept_rule(self) -> list[str]:
        return ["-i", self.bridge, "-o", self.bridge, "-j", "ACCEPT", "-m", "comment", "--comment",
                f"innet swarm lab {self.run_id}"]

    @property
    def pull_registry(self) -> str:
        """Registry address the nodes pull from."""
        return f"{self.gateway}:{REGISTRY_PORT}"

    @property
    def push_registry(self) -> str:
        """Registry address the host engine pushes to (loopback: no TLS needed)."""
        return f"127.0.0.1:{self.push_port}"

    @property
    def manager(self) -> LabNode:
        return self.nodes[0]

    # -- up ---------------------------------------------------------------------------

    def __enter__(self) -> "SwarmLab":
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def up(self) -> None:
        STATE_ROOT.mkdir(parents=True, exist_ok=True)
        self._lock = open(STATE_ROOT / "lock", "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LabError(f"another swarm lab holds {STATE_ROOT / 'lock'}; one lab at a time") from None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        _run(["ip", "link", "add", self.bridge, "type", "bridge"], f"bridge {self.bridge}")
        self._made.append(("link", self.bridge))
        _run(["ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge], f"address of {self.bridge}")
        _run(["ip", "link", "set", self.bridge, "up"], f"bridge {self.bridge} up")
        # bridged frames pass iptables' FORWARD chain (br_netfilter), whose policy a running
        # dockerd sets to DROP: let the nodes' own bridge through, and only it
        if shutil.which("iptables"):
            _run(["iptables", "-I", "FORWARD", *self._accept_rule()], f"iptables rule for {self.bridge}")
            self._made.append(("iptables", self.bridge))
        self._start_registries()
        for i in range(self.config.nodes):
            self.nodes.append(self._start_node(i))
        for node in self.nodes:
            self._connect(node)
            _remove_containers(node.client)  # a crashed run's tasks, kept in the data root
        self._form_swarm()
        self.progress(f"swarm of {len(self.nodes)} dockerd nodes on {self.bridge} ({self.subnet}.0/24) "
                      f"in {time.monotonic() - start:.1f} s")

    def _start_registries(self) -> None:
        storage = STATE_ROOT / "registry"
        if _size(storage) > REGISTRY_KEEP:  # every source change pushes a new layer; no GC here
            shutil.rmtree(storage, ignore_errors=True)
        storage.mkdir(parents=True, exist_ok=True)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.push_port = probe.getsockname()[1]
        for name, addr, readonly in (("push", f"127.0.0.1:{self.push_port}", False),
                                     ("pull", self.pull_registry, True)):
            conf = self.run_dir / f"registry-{name}.yml"
            conf.write_text("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
                            f"    rootdirectory: {storage}\n"
                            + ("  maintenance:\n    readonly:\n      enabled: true\n" if readonly else "")
                            + f"http:\n  addr: {addr}\n")
            log = open(self.run_dir / f"registry-{name}.log", "wb")
            self.registries.append(subprocess.Popen(["docker-registry", "serve", str(conf)], stdout=log,
                                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                    start_new_session=True))
        for addr in (self.push_registry, self.pull_registry):
            host, port = addr.rsplit(":", 1)
            self._wait(lambda: _accepts(host, int(port)), f"docker-registry on {addr}", 20.0)

    def _start_node(self, i: int) -> LabNode:
        name = f"n{i + 1}"
        node = LabNode(index=i, name=f"innet-{name}", netns=f"icl{self.run_id}-{name}", veth=f"icl{self.run_id}h{i + 1}",
                       address=f"{self.subnet}.{11 + i}", data_root=STATE_ROOT / "nodes" / name,
                       exec_root=self.run_dir / name, socket=self.run_dir / name / "docker.sock")
        _run(["ip", "netns", "add", node.netns], f"namespace {node.netns}")
        self._made.append(("netns", node.netns))
        _run(["ip", "link", "add", node.veth, "type", "veth", "peer", "name", "eth0", "netns", node.netns],
             f"veth of {node.name}")
        self._made.append(("link", node.veth))
        _run(["ip", "link", "set", node.veth, "master", self.bridge, "up"], f"veth {node.veth}")
        ns = ["ip", "netns", "exec", node.netns]
        _run([*ns, "ip", "addr", "add", f"{node.address}/24", "dev", "eth0"], f"address of {node.name}")
        _run([*ns, "ip", "link", "set", "eth0", "up"], f"eth0 of {node.name}")
        _run([*ns, "ip", "link", "set", "lo", "up"], f"lo of {node.name}")
        _run([*ns, "ip", "route", "add", "default", "via", self.gateway], f"route of {node.name}")
        shutil.rmtree(node.data_root / "swarm", ignore_errors=True)  # a crashed run's membership
        node.data_root.mkdir(parents=True, exist_ok=True)
        node.exec_root.mkdir(parents=True, exist_ok=True)
        dockerd = [shutil.which("dockerd") or "dockerd", "--data-root", str(node.data_root),
                   "--exec-root", str(node.exec_root / "exec"), "--pidfile", str(node.exec_root / "dockerd.pid"),
                   "-H", node.docker_host, "--insecure-registry", self.pull_registry, "--log-level", "warn",
                   "--bip", "172.31.254.1/24"]
        log = open(node.exec_root / "dockerd.log", "wb")
        # nsenter, not `ip netns exec`: the latter remounts /sys, hiding the cgroup mounts dockerd needs
        node.popen = subprocess.Popen(["unshare", "--uts", "--", "sh", "-c", f'hostname {node.name} && exec "$@"',
                                       "sh", "nsenter", f"--net=/run/netns/{node.netns}", "--", *dockerd],
                                      stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True)
        return node

    def _connect(self, node: LabNode) -> None:
        import docker
        from docker.errors import DockerException

        def ready() -> bool:
            if node.popen is not None and node.popen.poll() is not None:
                tail = (node.exec_root / "dockerd.log").read_text(errors="replace").strip().splitlines()[-3:]
                raise LabError(f"dockerd of {node.name} exited with {node.popen.returncode}: {' | '.join(tail)}")
            try:
                node.client = docker.DockerClient(base_url=node.docker_host, timeout=300)  # type: ignore[attr-defined]
                node.client.ping()
                return True
            except DockerException:
                return False

        self._wait(ready, f"dockerd of {node.name}", self.config.start_deadline)

    def _form_swarm(self) -> None:
        manager = self.manager
        manager.client.swarm.init(advertise_addr=manager.address, listen_addr=f"{manager.address}:2377",
                                  default_addr_pool=[ADDR_POOL], subnet_size=24)
        token = manager.client.swarm.attrs["JoinTokens"]["Worker"]
        for node in self.nodes[1:]:
            node.client.swarm.join(remote_addrs=[f"{manager.address}:2377"], join_token=token,
                                   advertise_addr=node.address, listen_addr=f"{node.address}:2377")
        self._wait(lambda: sum(n.attrs["Status"]["State"] == "ready" for n in manager.client.nodes.list())
                   == len(self.nodes), "every node ready in the swarm", 60.0)
        for node in manager.client.nodes.list():
            hostname = node.attrs["Description"]["Hostname"]
            index = int(hostname.removeprefix("innet-n")) - 1
            spec = node.attrs["Spec"]
            spec["Labels"] = {"innet.node": hostname,
                              "innet.switch": str(index in self.config.switch_nodes).lower(),
                              "innet.worker": str(index in self.config.worker_nodes).lower()}
            node.update(spec)

    @staticmethod
    def _wait(ready: Callable[[], bool], what: str, deadline: float) -> None:
        end = time.monotonic() + deadline
        while not ready():
            if time.monotonic() > end:
                raise LabError(f"{what}: not ready within {deadline:g} s")
            time.sleep(0.3)

    def env(self) -> dict[str, str]:
        """Environment that points the docker CLI and SDK at the manager."""
        return {"DOCKER_HOST": self.manager.docker_host}

    # -- down -------------------------------------------------------------------------

    def leftovers(self) -> list[str]:
        """Containers, services, volumes and non-default networks still on any node."""
        found: list[str] = []
        for node in self.nodes:
            if node.client is None:
                continue
            try:
                found += [f"{node.name}: container {c.name}" for c in node.client.containers.list(all=True)]
                found += [f"{node.name}: volume {v.name}" for v in node.client.volumes.list()]
                found += [f"{node.name}: network {n.name}" for n in node.client.networks.list()
                          if n.name not in ("bridge", "host", "none", "docker_gwbridge", "ingress")]
            except Exception as error:  # an engine gone away: said, not raised
                found.append(f"{node.name}: engine does not answer ({error})")
        if self.nodes and self.manager.client is not None:
            try:
                found += [f"service {s.name}" for s in self.manager.client.services.list()]
            except Exception:
                pass
        return found

    def wait_clean(self, deadline: float = 60.0) -> list[str]:
        """:meth:`leftovers` once they are gone, or what is left after ``deadline`` seconds (Swarm
        removes a removed stack's exited task containers a little after ``docker stack rm``)."""
        end = time.monotonic() + deadline
        while (left := self.leftovers()) and time.monotonic() < end:
            time.sleep(1.0)
        return left

    def down(self) -> None:
        """Leave the swarm, stop the daemons and registries, delete namespaces, veths and bridge;
        each step even if another fails."""
        for node in reversed(self.nodes):
            if node.client is not None:
                try:
                    node.client.swarm.leave(force=True)
                except Exception:
                    pass
                _remove_containers(node.client)
                _prune_images(node.client, keep=self.image)
                node.client.close()
                node.client = None
        for proc in [n.popen for n in self.nodes if n.popen is not None] + self.registries:
            _stop(proc)
        for node in self.nodes:
            shutil.rmtree(node.data_root / "swarm", ignore_errors=True)
        for kind, name in reversed(self._made):
            argv = {"netns": ["ip", "netns", "delete", name], "link": ["ip", "link", "delete", name],
                    "iptables": ["iptables", "-D", "FORWARD", *self._accept_rule()]}[kind]
            subprocess.run(argv, capture_output=True, timeout=30)
        self._made.clear()
        self.registries.clear()
        shutil.rmtree(self.run_dir, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def _prune_images(client: Any, keep: str) -> None:
    """Every image of a lab node but ``keep`` (the run's image; its layers make the next pull short)."""
    try:
        for image in client.images.list():
            if keep not in image.tags:
                client.images.remove(image.id, force=True)
    except Exception:  # in use or gone: the next run prunes again
        pass


def _remove_containers(client: Any) -> None:
    """Every container of a lab node's engine (only the lab runs there)."""
    try:
        for container in client.containers.list(all=True):
            container.remove(force=True)
    except Exception:  # an engine that went away has none left to remove
        pass


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes], grace: float = 30.0) -> None:
    """SIGTERM to the process group we started (dockerd and its containerd), SIGKILL after ``grace``."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # what remains of the group (containerd, shims)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
