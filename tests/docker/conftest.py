"""The container tier: a Docker engine (started here as root when it is not running), the
innet image (built once per input hash, then reused), and the compose CLI.

Every test here is marked ``docker``; without an engine, root to start one, or the SDK,
each is skipped with that reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

ENGINE_DEADLINE = 60.0
"""Seconds dockerd may take to answer after we start it."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.docker)
            item.add_marker(pytest.mark.slow)


def _connect(docker: Any) -> Any | None:
    """A client of a running engine, None when none answers (the SDK asks the engine for its
    API version on creation, so creating it is the probe)."""
    try:
        client = docker.DockerClient(base_url=os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"),
                                     timeout=600)
        client.ping()
        return client
    except docker.errors.DockerException:
        return None


@pytest.fixture(scope="session")
def docker_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    docker = pytest.importorskip("docker", reason="the Docker SDK for Python is not installed (pip install 'innet[docker]')")
    client = _connect(docker)
    started: subprocess.Popen[bytes] | None = None
    if client is None:
        dockerd = shutil.which("dockerd")
        if dockerd is None:
            pytest.skip("no Docker engine running and no dockerd to start (apt-get install docker.io)")
        if os.geteuid() != 0:
            pytest.skip("no Docker engine running, and starting dockerd needs root")
        log = tmp_path_factory.mktemp("dockerd") / "dockerd.log"
        started = subprocess.Popen([dockerd], stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + ENGINE_DEADLINE
        while (client := _connect(docker)) is None:
            if started.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace").strip().splitlines()[-3:]
                started.terminate()
                pytest.skip(f"dockerd did not come up within {ENGINE_DEADLINE:g} s: {' | '.join(tail)}")
            time.sleep(0.2)
    try:
        yield client
    finally:
        client.close()
        if started is not None:
            started.terminate()
            try:
                started.wait(timeout=30)
            except subprocess.TimeoutExpired:
                started.kill()


@pytest.fixture(scope="session")
def innet_image(docker_client: Any) -> str:
    """``innet:<hash of Dockerfile, constraints and sources>``: built once, reused while unchanged."""
    from innet.testbed.backends.docker.images import build_image

    start = time.monotonic()
    tag = build_image(docker_client)
    print(f"\nimage {tag} ready in {time.monotonic() - start:.1f} s")
    return tag


@pytest.fixture(scope="session")
def compose_cli() -> list[str]:
    """``docker compose`` (v2) when the plugin answers, else ``docker-compose`` (v1)."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    v1 = shutil.which("docker-compose")
    if v1 is None:
        pytest.skip("neither `docker compose` (v2 plugin) nor `docker-compose` (v1, apt-get install docker-compose) "
                    "is installed")
    return [v1]
