"""The cluster tier: a 3-node Docker Swarm on this machine (``innet.testbed.cluster.lab``:
one dockerd per network namespace, joined over a bridge, pulling from Debian's
docker-registry), the innet image built by the host's engine and pushed to that registry.

Every test here is marked ``cluster`` (and ``slow``); without root, docker.io,
docker-registry or the SDK, each is skipped naming what is missing. The host engine is the
docker tier's (started as root when not running).
"""

from __future__ import annotations

import importlib.util
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

_spec = importlib.util.spec_from_file_location("innet_docker_tier_conftest", Path(__file__).parents[1] / "docker" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_docker_tier = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_docker_tier)
docker_client = _docker_tier.docker_client
innet_image = _docker_tier.innet_image


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.cluster)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def swarm_lab(docker_client: Any, innet_image: str) -> Iterator[Any]:
    """A running 3-node lab with the image pushed; torn down (and checked) at the end."""
    from innet.testbed.cluster.lab import LabError, SwarmLab, preconditions

    reason = preconditions()
    if reason:
        pytest.skip(reason)
    lab = SwarmLab(progress=print)
    try:
        lab.__enter__()
    except LabError as error:
        pytest.skip(f"no swarm lab here: {error}")
    try:
        from innet.testbed.cluster.registry import push_image
        from innet.testbed.cluster.torch_image import TorchImageError, build_torch_image

        start = time.monotonic()
        try:  # the torch image where the host has torch: the gloo, DDP and torchrun tests need it
            local = build_torch_image(docker_client, innet_image)
            lab.torch = True
        except TorchImageError as error:
            print(f"\nno torch image ({error}): the torch tests skip")
            local, lab.torch = innet_image, False
        ref = push_image(docker_client, lab.push_registry, local)
        print(f"\npushed {ref} in {time.monotonic() - start:.1f} s")
        lab.image = ref.replace(lab.push_registry, lab.pull_registry)
        yield lab
    finally:
        names = [n.netns for n in lab.nodes] + [lab.bridge] + [n.veth for n in lab.nodes]
        pids = [n.popen.pid for n in lab.nodes if n.popen is not None] + [p.pid for p in lab.registries]
        lab.down()
    left = [name for name in names if name in _ip("netns", "list") or name in _ip("link", "show")]
    left += [f"process {pid}" for pid in pids if Path(f"/proc/{pid}").exists()]
    assert not left, f"the swarm lab left: {left}"


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30).stdout


LUWU_WORKERS = 4
LUWU_STEPS = 6
"""The LuWu runs the cluster's LuWu tests hold against the Mininet star's."""


@pytest.fixture(scope="session")
def luwu_star_run() -> Any:
    """LuWu (one node, one-job plan, K=256) with ``LUWU_WORKERS`` workers for ``LUWU_STEPS``
    steps on the Mininet star, run once for every test that compares a swarm run with it."""
    from innet.testbed.backends.select import open_testbed, resolve_backend
    from innet.testbed.core.testbed import TestbedOptions
    from innet.testbed.luwu.run import RunConfig, luwu_star, run_training

    pytest.importorskip("torch", reason="torch (optional dependency) is not installed: no LuWu trainers")
    if resolve_backend("auto") != "mininet":
        pytest.skip("Mininet is not available here: no star to compare the swarm's LuWu run with")
    with open_testbed(luwu_star(LUWU_WORKERS, 1), TestbedOptions(k=256, defines=(("INNET_K", "256"),)),
                      backend="mininet") as tb:
        star = run_training(tb, RunConfig(mode="luwu", workers=LUWU_WORKERS, nodes=1, steps=LUWU_STEPS,
                                          duplex=False, timeout=300))
    assert not star.errors, star.errors
    return star
