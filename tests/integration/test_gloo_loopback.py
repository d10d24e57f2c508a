"""Two gloo ranks on loopback rendezvous through rank 0's store bound to 127.0.0.1
(innet.testbed.core.gloo.rendezvous_store) and allreduce correctly."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from innet.testbed.core.freeport import free_port
from innet.testbed.core.gloo import command, gloo_available, gloo_env


@pytest.mark.slow
def test_two_ranks_allreduce_through_the_loopback_store():
    if not gloo_available():
        pytest.skip("torch (the gloo baseline's optional dependency) is not installed")
    port = free_port()
    env = {**os.environ, **gloo_env("lo", "127.0.0.1", port)}
    procs = [subprocess.Popen(command(rank, 2, "127.0.0.1", port, [4096], repeats=1, timeout_s=30),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for rank in (0, 1)]
    try:
        outputs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err
        (line,) = out.splitlines()
        assert json.loads(line)["ok"] is True
