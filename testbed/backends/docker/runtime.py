"""The container testbed driven by the Docker SDK (``innet testbed up --runtime docker``).

The same services as ``docker-compose.yml`` (switch, controller, N workers, a results
volume, one bridge network), created through the ``docker`` package rather than the
compose CLI, every object labelled ``org.innet.component`` and ``org.innet.run=<run>`` so
that :func:`cleanup` finds what a crashed run left (it never touches objects without the
label). ``DockerTestbed.run`` brings it up, waits for the workers, reads their results
from the volume and tears everything down in ``finally``.
"""

from __future__ import annotations

import io
import json
import tarfile
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from innet.testbed.backends.docker.images import LABEL

RUN_LABEL = "org.innet.run"


class DockerRuntimeError(RuntimeError):
    """The Docker engine is missing or a container failed (names it, with its log tail)."""


def client() -> Any:
    """A Docker client from the environment; one clear error when the SDK or engine is missing."""
    try:
        import docker
    except ImportError:
        raise DockerRuntimeError("the Docker SDK for Python is not installed: pip install 'innet[docker]'") from None
    try:
        c = docker.from_env()  # type: ignore[attr-defined]
        c.ping()
        return c
    except docker.errors.DockerException as error:
        raise DockerRuntimeError(f"no Docker engine answers ({error}); start dockerd (Debian: apt-get install "
                                 "docker.io) or set DOCKER_HOST") from None


@dataclass(frozen=True)
class DockerTestbedConfig:
    """One container run."""

    image: str = "innet:latest"
    """Image of every service (``testbed.docker_images.build_image``)."""
    workers: int = 2
    """Worker containers (and switch ports, job ranks)."""
    elements: int = 4096
    """int32 elements of the exact allreduce."""
    deadline: float = 240.0
    """Seconds for the whole run."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment of every container."""


@dataclass(frozen=True)
class DockerRunResult:
    """What the run produced."""

    run_id: str
    results: tuple[dict[str, Any], ...]
    """The saved documents the workers wrote (``worker-<rank>.json``, what
    :class:`innet.testbed.ina.records.WorkerReport` gives as JSON), by rank, as read from the
    results volume."""
    logs: dict[str, str]
    """Container name -> its log."""


class DockerTestbed:
    """switch + controller + workers as containers on a private bridge network."""

    def __init__(self, config: DockerTestbedConfig, docker_client: Any | None = None) -> None:
        self.config = config
        self.client = docker_client if docker_client is not None else client()
        self.run_id = uuid.uuid4().hex[:8]
        self.labels = {LABEL: "testbed", RUN_LABEL: self.run_id}
        self.network: Any = None
        self.volume: Any = None
        self.containers: dict[str, Any] = {}

    def _env(self) -> dict[str, str]:
        return {"INNET_WORKERS": str(self.config.workers), "INNET_SWITCH_HOST": self._name("switch"),
                "INNET_ELEMENTS": str(self.config.elements), "INNET_DEADLINE": str(int(self.config.deadline)),
                "INNET_RESULTS": "/results", **self.config.env}

    def _name(self, name: str) -> str:
        """Container name, resolvable by the others on the run's network."""
        return f"innet-{self.run_id}-{name}"

    def _start(self, name: str, role: str) -> Any:
        container = self.client.containers.create(
            self.config.image, ["python", "-m", "innet.testbed.ina.compose", role], name=self._name(name),
            environment=self._env(), labels={**self.labels, LABEL: role}, network=self.network.name,
            volumes={self.volume.name: {"bind": "/results", "mode": "rw"}})
        self.containers[name] = container
        container.start()
        return container

    def _wait(self, name: str, until: float) -> int:
        container = self.containers[name]
        try:
            status = container.wait(timeout=max(1.0, until - time.monotonic()))
        except Exception:  # requests' ReadTimeout: the container is still running
            raise DockerRuntimeError(f"container {name} did not finish within {self.config.deadline:g} s; "
                                     f"its log:\n{self._log(name)}") from None
        code = int(status.get("StatusCode", -1))
        if code != 0:
            raise DockerRuntimeError(f"container {name} exited with status {code}; its log:\n{self._log(name)}")
        return code

    def _log(self, name: str, lines: int = 20) -> str:
        text = self.containers[name].logs().decode(errors="replace")
        return "\n".join(text.strip().splitlines()[-lines:]) or "(empty log)"

    def _read_results(self, holder: Any) -> tuple[dict[str, Any], ...]:
        stream, _ = holder.get_archive("/results")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            docs = []
            for member in tar.getmembers():
                base = member.name.rsplit("/", 1)[-1]
                if base.startswith("worker-") and base.endswith(".json"):
                    f = tar.extractfile(member)
                    if f is not None:
                        docs.append(json.loads(f.read()))
        return tuple(sorted(docs, key=lambda d: int(d["rank"])))

    def run(self, progress: Callable[[str], None] = lambda _: None) -> DockerRunResult:
        until = time.monotonic() + self.config.deadline
        try:
            self.network = self.client.networks.create(f"innet-{self.run_id}", driver="bridge", labels=self.labels)
            self.volume = self.client.volumes.create(f"innet-{self.run_id}-results", labels=self.labels)
            progress(f"run {self.run_id}: network {self.network.name}, volume {self.volume.name}")
            self._start("switch", "switch")
            self._start("controller", "controller")
            self._wait("controller", until)
            progress("controller: job ready")
            for rank in range(self.config.workers):
                self._start(f"worker{rank}", "worker")
            for rank in range(self.config.workers):
                self._wait(f"worker{rank}", until)
            self._wait("switch", until)
            results = self._read_results(self.containers["switch"])
            logs = {name: c.logs().decode(errors="replace") for name, c in self.containers.items()}
            return DockerRunResult(self.run_id, results, logs)
        finally:
            self.teardown()

    def teardown(self) -> None:
        """Remove this run's containers, network and volume (each even if another fails)."""
        remove_labelled(self.client, {RUN_LABEL: self.run_id})
        self.containers.clear()
        self.network = self.volume = None


def remove_labelled(docker_client: Any, labels: dict[str, str] | None = None) -> list[str]:
    """Remove containers, networks and volumes carrying ``labels`` (default: any innet label);
    what was removed, one line each."""
    import docker.errors

    selector = [f"{k}={v}" for k, v in (labels or {}).items()] or [LABEL]
    filters = {"label": selector}
    done: list[str] = []
    for container in docker_client.containers.list(all=True, filters=filters):
        try:
            container.remove(force=True)
            done.append(f"removed container {container.name}")
        except docker.errors.NotFound:
            pass
    for network in docker_client.networks.list(filters=filters):
        try:
            network.remove()
            done.append(f"removed network {network.name}")
        except docker.errors.NotFound:
            pass
    for volume in docker_client.volumes.list(filters=filters):
        try:
            volume.remove(force=True)
            done.append(f"removed volume {volume.name}")
        except docker.errors.NotFound:
            pass
    return done
