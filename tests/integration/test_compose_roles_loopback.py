"""The compose roles (``python -m innet.testbed.ina.compose switch|controller|worker``) as plain
processes on 127.0.0.1, without Docker: the controller's two jobs, both workers' exact
allreduce, and the demo training whose final parameters must equal the numpy model of the
switch bit for bit (what ``docker compose up`` runs; tests/docker runs it in containers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from innet.testbed.ina.compose import ComposeConfig, digest, expected_sum, expected_training
from innet.testbed.core.freeport import free_port

WORKERS = 2


@pytest.mark.slow
def test_roles_allreduce_and_train_exactly(tmp_path: Path) -> None:
    udp_base = free_port()  # below the ephemeral range, so base + 40 is below 65536 too
    env = {**os.environ, "INNET_WORKERS": str(WORKERS), "INNET_SWITCH_HOST": "127.0.0.1",
           "INNET_GRPC_PORT": str(free_port()), "INNET_UDP_BASE": str(udp_base), "INNET_RESULTS": str(tmp_path),
           "INNET_ELEMENTS": "1024", "INNET_TRAIN_STEPS": "12", "INNET_DEADLINE": "60"}
    config = ComposeConfig.from_env(env)

    def role(name: str, tag: str = "") -> subprocess.Popen[bytes]:
        log = open(tmp_path / f"{name}{tag}.log", "wb")
        return subprocess.Popen([sys.executable, "-m", "innet.testbed.ina.compose", name], env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)

    procs = [role("switch")]
    try:
        procs.append(role("controller"))
        assert procs[1].wait(timeout=60) == 0, (tmp_path / "controller.log").read_text()
        procs += [role("worker", str(i)) for i in range(WORKERS)]
        for i, p in enumerate(procs[2:]):
            assert p.wait(timeout=90) == 0, (tmp_path / f"worker{i}.log").read_text()
        assert procs[0].wait(timeout=30) == 0, (tmp_path / "switch.log").read_text()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    docs = sorted((json.loads(p.read_text()) for p in tmp_path.glob("worker-*.json")), key=lambda d: d["rank"])
    want_sum = digest(expected_sum(WORKERS, config.elements))
    want_params = digest(expected_training(config))
    assert [(d["rank"], d["ok"], d["sha256"]) for d in docs] == [(r, True, want_sum) for r in range(WORKERS)]
    assert [(d["train"]["steps"], d["train"]["bit_exact"], d["train"]["sha256"]) for d in docs] == \
        [(12, True, want_params)] * WORKERS
