"""A live Controller survives a restart of its switch: innet-switch runs as a
process; it is killed and started again on the same port, empty; the controller's next
call reconnects with back-off, arbitrates with the same election id, pushes the pipeline
again and re-installs the forwarding and the job it had installed, then answers."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from innet.controller.controller import Controller
from innet.controller.errors import NoPipelineError, SwitchUnreachableError
from innet.controller.jobs import Forwarding, JobSpec, WorkerSpec
from innet.controller.pipeline import PipelineConfig
from innet.controller.reconnect import ReconnectPolicy
from innet.controller.switch import Switch, SwitchEndpoint

INNET = Path(__file__).parents[2] / "p4" / "innet.p4"
SIZES = {"INNET_K": "4", "INNET_SLOTS": "16", "INNET_PARAM_CHUNKS": "32", "INNET_MAX_JOBS": "8"}
READY = "innet-switch: P4Runtime listening on "


class SwitchProcess:
    """``innet-switch --no-p4`` on 127.0.0.1:``port`` (0: any free port)."""

    def __init__(self, port: int = 0) -> None:
        cmd = [sys.executable, "-m", "innet.switch.cli.switch", "--no-p4", "--log-level", "warning",
               "--grpc-server-addr", f"127.0.0.1:{port}"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the ready line, or EOF when it failed to start
        if not line.startswith(READY):
            self.kill()
            raise AssertionError(f"innet-switch did not start: {line!r} {self.proc.stderr.read()!r}")
        self.address = line[len(READY):].strip()
        self.port = int(self.address.rsplit(":", 1)[1])

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def restarted(switch: SwitchProcess, deadline: float = 10.0) -> SwitchProcess:
    """Kill ``switch`` and start a fresh one on its port (retrying while the port is busy)."""
    switch.kill()
    end = time.monotonic() + deadline
    while True:
        try:
            return SwitchProcess(switch.port)
        except AssertionError:
            if time.monotonic() > end:
                raise
            time.sleep(0.1)


def job() -> JobSpec:
    workers = tuple(WorkerSpec(r, r + 1, f"00:00:00:00:00:{r + 1:02x}", f"10.0.0.{r + 1}", 5000 + r)
                    for r in range(2))
    return JobSpec(3, workers, slot_base=0, slot_count=4, k=4, mode="sgd", lr=0.5, param_chunks=6)


def test_controller_reinstalls_pipeline_forwarding_and_job_after_restart():
    switch = SwitchProcess()
    try:
        spec = SwitchEndpoint("s1", switch.address, timeout=5, reconnect=ReconnectPolicy(deadline=15))
        with Controller([spec]) as ctl:
            ctl.push(PipelineConfig.from_p4(INNET, SIZES))
            spec_job = job()
            ctl.install_forwarding({"s1": Forwarding.for_workers("00:00:00:00:00:fe", "10.0.0.254",
                                                                   spec_job.workers)})
            ctl.create_job(spec_job)
            ctl.load_params(spec_job, np.arange(24, dtype=np.float32))
            before = ctl.jobs()["s1"]
            routes_before = ctl["s1"].switch.read_table("ipv4_lpm")

            switch = restarted(switch)  # same port, no pipeline, no state

            assert ctl.jobs()["s1"] == before  # reconnected, pushed, job re-created
            node = ctl["s1"]
            assert node.switch.client.reconnects == 1 and node.switch.is_primary
            assert sorted(map(repr, node.switch.read_table("ipv4_lpm"))) == sorted(map(repr, routes_before))
            assert sorted(node.switch.read_multicast_groups()) == [3]
            assert not ctl.read_params(spec_job).any()  # parameters lived in the switch: zero again
            ctl.load_params(spec_job, np.ones(24, dtype=np.float32))  # and the job works
            assert ctl.read_params(spec_job).tolist() == [1.0] * 24
    finally:
        switch.kill()


def test_switch_back_without_a_pipeline_this_session_did_not_push():
    switch = SwitchProcess()
    try:
        with Switch(SwitchEndpoint("s1", switch.address, timeout=5, reconnect=ReconnectPolicy(deadline=15))) as sw:
            assert sw.client.get_p4info() is None
            switch = restarted(switch)
            with pytest.raises(NoPipelineError, match=r"switch s1 \(127.0.0.1:\d+\) came back without a pipeline "
                                                      r"after losing the connection \(restarted\?\), and this "
                                                      r"session did not push one: push it again"):
                sw.client.get_p4info()
    finally:
        switch.kill()


def test_switch_that_stays_away_fails_after_the_deadline():
    switch = SwitchProcess()
    try:
        with Switch(SwitchEndpoint("s1", switch.address, timeout=5, reconnect=ReconnectPolicy(deadline=1.5))) as sw:
            switch.kill()
            start = time.monotonic()
            with pytest.raises(SwitchUnreachableError, match=r"connection lost and not back within 1.5 s "
                                                             r"\(\d+ attempts; last: "):
                sw.client.get_p4info()
            assert time.monotonic() - start < 4
    finally:
        switch.kill()
