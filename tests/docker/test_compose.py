"""docker-compose.yml end to end: 2 workers allreduce exactly through the switch container, then
run the demo training whose final parameters equal the switch's numpy model bit for bit, and
``down -v`` leaves no container, network or volume of the project behind."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import uuid
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKERS = 2
ELEMENTS = 4096
TRAIN_STEPS = 12


def _want_training() -> tuple[int, bool, str]:
    from innet.testbed.ina.compose import ComposeConfig, digest, expected_training

    return TRAIN_STEPS, True, digest(expected_training(ComposeConfig(workers=WORKERS, train_steps=TRAIN_STEPS)))


def _results(container: Any) -> list[dict[str, Any]]:
    stream, _ = container.get_archive("/results")
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        docs = [json.loads(tar.extractfile(m).read()) for m in tar.getmembers()  # type: ignore[union-attr]
                if m.name.rsplit("/", 1)[-1].startswith("worker-") and m.name.endswith(".json")]
    return sorted(docs, key=lambda d: d["rank"])


def _project_objects(client: Any, project: str) -> list[str]:
    label = {"label": [f"com.docker.compose.project={project}"]}
    return ([f"container {c.name}" for c in client.containers.list(all=True, filters=label)]
            + [f"network {n.name}" for n in client.networks.list(filters=label)]
            + [f"volume {v.name}" for v in client.volumes.list(filters=label)])


def test_compose_up_two_workers_exact_sum_and_down_leaves_nothing(docker_client: Any, innet_image: str,
                                                                   compose_cli: list[str]) -> None:
    from innet.testbed.ina.compose import digest, expected_sum

    compose = compose_cli
    project = f"innettest{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "INNET_IMAGE": innet_image, "INNET_WORKERS": str(WORKERS),
           "INNET_ELEMENTS": str(ELEMENTS), "INNET_DEADLINE": "120", "INNET_TRAIN_STEPS": str(TRAIN_STEPS)}
    base = [*compose, "-f", str(REPO / "docker-compose.yml"), "-p", project]
    try:
        up = subprocess.run([*base, "up", "--no-build", "--scale", f"worker={WORKERS}"], env=env,
                            capture_output=True, text=True, timeout=180)
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
        (switch,) = docker_client.containers.list(all=True, filters={"label": [
            f"com.docker.compose.project={project}", "com.docker.compose.service=switch"]})
        results = _results(switch)
        want = digest(expected_sum(WORKERS, ELEMENTS))
        assert [(r["rank"], r["ok"], r["sha256"]) for r in results] == [(r, True, want) for r in range(WORKERS)]
        assert [(r["train"]["steps"], r["train"]["bit_exact"], r["train"]["sha256"]) for r in results] == \
            [_want_training()] * WORKERS
        assert len({r["host"] for r in results}) == WORKERS  # two distinct worker containers
    finally:
        down = subprocess.run([*base, "down", "-v", "--remove-orphans"], env=env, capture_output=True, text=True,
                              timeout=120)
    assert down.returncode == 0, down.stderr[-2000:]
    assert _project_objects(docker_client, project) == []


def test_docker_runtime_sdk_run_and_cleanup(docker_client: Any, innet_image: str) -> None:
    """The SDK-driven testbed (innet testbed up --runtime docker) gives the same exact sum and
    removes its labelled objects."""
    from innet.testbed.ina.compose import digest, expected_sum
    from innet.testbed.backends.docker.runtime import RUN_LABEL, DockerTestbed, DockerTestbedConfig

    tb = DockerTestbed(DockerTestbedConfig(image=innet_image, workers=WORKERS, elements=ELEMENTS, deadline=120,
                                           env={"INNET_TRAIN_STEPS": str(TRAIN_STEPS)}), docker_client)
    result = tb.run()
    want = digest(expected_sum(WORKERS, ELEMENTS))
    assert [(r["rank"], r["ok"], r["sha256"]) for r in result.results] == [(r, True, want) for r in range(WORKERS)]
    assert [(r["train"]["steps"], r["train"]["bit_exact"], r["train"]["sha256"]) for r in result.results] == \
        [_want_training()] * WORKERS
    label = {"label": [f"{RUN_LABEL}={result.run_id}"]}
    assert docker_client.containers.list(all=True, filters=label) == []
    assert docker_client.networks.list(filters=label) == []
    assert docker_client.volumes.list(filters=label) == []
