"""innet.host.agent.agent: an agent process never outlives its worker (fake switch, TEST DOUBLE).

A worker process (a small script) starts an agent against the fake switch; the test
SIGKILLs only the worker and checks that the agent process is gone at once, idle or in
the middle of a long operation, and that the switch hears nothing more from it (so the
surviving worker's operation fails naming the dead rank instead of completing)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from innet.host.agent.agent import Agent, AgentConfig
from innet.host.agent.aggregator import AggregationError, JobConfig, Timing
from innet.host.agent.transport import UdpTransportConfig
from innet.wire import Message, MsgType
from innet.testbed.core.processes import pid_alive

from testkit.fake_innet_switch import FakeInnetSwitch, FakeUdpSwitch

K = 16
JOB = 9
WINDOW = 4
SIZE = 400_000
"""Values per operation: 25,000 chunks, far more than the test lets run."""
EXIT_BOUND = 0.5
"""Seconds from the worker's death until its agent must be gone (well under 100 ms when the
machine is idle; slack for a loaded 2-core machine)."""
TIMING = Timing(initial_rto=0.02, max_rto=0.2, chunk_deadline=2.0)

WORKER = textwrap.dedent("""
    import sys, time
    import numpy as np
    from innet.host.agent.agent import Agent, AgentConfig
    from innet.host.agent.aggregator import JobConfig, Timing
    from innet.host.agent.transport import UdpTransportConfig

    def main() -> None:
        port, start_method, busy = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "busy"
        config = AgentConfig(JobConfig({job}, 0, 2, {window}, {k}, epoch=1),
                             UdpTransportConfig("127.0.0.1", port, "127.0.0.1"),
                             timing=Timing(initial_rto=0.02, max_rto=0.2, chunk_deadline=2.0),
                             start_method=start_method)
        agent = Agent(config, capacity={size}).start()
        if busy:
            agent.push_int(np.arange({size}, dtype=np.int32))
        print(agent._process.pid, flush=True)
        time.sleep(600)

    if __name__ == "__main__":
        main()
""").format(job=JOB, window=WINDOW, k=K, size=SIZE)


class CountingSwitch(FakeInnetSwitch):
    """The fake switch, counting every message it receives per worker."""

    def __init__(self, k: int) -> None:
        super().__init__(k)
        self.received: dict[int, int] = {}

    def handle(self, msg: Message) -> tuple[str, Message] | None:
        if msg.msg_type == MsgType.CONTRIB:
            with self.lock:
                self.received[msg.worker] = self.received.get(msg.worker, 0) + 1
        return super().handle(msg)


def _wait_until(condition: object, timeout: float, what: str) -> float:
    """Poll ``condition()`` every 5 ms; seconds it took. Fails after ``timeout``."""
    start = time.monotonic()
    while not condition():  # type: ignore[operator]
        assert time.monotonic() - start < timeout, f"{what}: not within {timeout:g} s"
        time.sleep(0.005)
    return time.monotonic() - start


def _start_worker(tmp_path: Path, port: int, start_method: str, busy: bool) -> tuple[subprocess.Popen[str], int]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    worker = subprocess.Popen([sys.executable, str(script), str(port), start_method, "busy" if busy else "idle"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert worker.stdout is not None and worker.stderr is not None
    line = worker.stdout.readline()
    assert line.strip().isdigit(), (line, worker.stderr.read() if worker.poll() is not None else "")
    return worker, int(line)


def _kill(worker: subprocess.Popen[str], agent_pid: int) -> float:
    """SIGKILL the worker only; seconds until its agent process is gone."""
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)
    assert worker.returncode == -signal.SIGKILL
    try:
        return _wait_until(lambda: not pid_alive(agent_pid), 10.0, f"agent process {agent_pid} exit")
    finally:
        if pid_alive(agent_pid):
            os.kill(agent_pid, signal.SIGKILL)


@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_agent_exits_when_its_idle_worker_is_killed(tmp_path: Path, start_method: str) -> None:
    # fork: the agent inherits the worker's end of the control pipe, so no EOF ever comes
    # and only the parent-death signal can end it
    switch = CountingSwitch(K)
    with FakeUdpSwitch(switch) as fake:
        worker, agent_pid = _start_worker(tmp_path, fake.address[1], start_method, busy=False)
        assert pid_alive(agent_pid)
        assert _kill(worker, agent_pid) < EXIT_BOUND


@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_killed_worker_stops_contributing_mid_operation(tmp_path: Path, start_method: str) -> None:
    switch = CountingSwitch(K)
    job = switch.add_job(JOB, 2, WINDOW)
    with FakeUdpSwitch(switch) as fake:
        survivor = Agent(AgentConfig(JobConfig(JOB, 1, 2, WINDOW, K, epoch=1),
                                     UdpTransportConfig("127.0.0.1", fake.address[1], "127.0.0.1"),
                                     timing=TIMING), capacity=SIZE).start()
        try:
            worker, agent_pid = _start_worker(tmp_path, fake.address[1], start_method, busy=True)
            survivor.push_int(np.arange(SIZE, dtype=np.int32))
            _wait_until(lambda: job.counters["completions"] >= 200, 60.0, "200 chunks aggregated")
            assert _kill(worker, agent_pid) < EXIT_BOUND
            # what was in flight when the agent died is handled within a few ms; then silence
            time.sleep(0.2)
            heard = switch.received[0]
            with pytest.raises(AggregationError, match=rf"job {JOB}, worker 1: chunk \d+ .*missing workers \[0\]"):
                survivor.pull_int(timeout=30)
            assert switch.received[0] == heard, "the dead worker's agent kept sending"
            assert job.counters["completions"] < -(-SIZE // K)  # the operation did not complete
        finally:
            survivor.close()


def test_agent_started_by_a_thread_that_exits_keeps_serving() -> None:
    # The parent-death signal also fires when the starting thread exits; the agent must
    # ignore it while the worker process lives.
    switch = FakeInnetSwitch(K)
    switch.add_job(1, 1, 2)
    with FakeUdpSwitch(switch) as fake:
        agents: list[Agent] = []
        starter = threading.Thread(target=lambda: agents.append(Agent(AgentConfig(
            JobConfig(1, 0, 1, 2, K, epoch=1), UdpTransportConfig("127.0.0.1", fake.address[1], "127.0.0.1")),
            capacity=8).start()))
        starter.start()
        starter.join()
        (agent,) = agents
        try:
            time.sleep(0.2)  # the signal, if any, has been delivered and handled
            assert agent._process is not None and agent._process.is_alive()
            assert list(agent.allreduce_int(np.arange(20, dtype=np.int32))) == list(range(20))
        finally:
            agent.close()


def test_close_during_an_operation_stops_the_agent_at_once() -> None:
    switch = FakeInnetSwitch(K)
    with FakeUdpSwitch(switch) as fake:
        fake.silent = True  # the operation never completes
        agent = Agent(AgentConfig(JobConfig(1, 0, 2, 2, K, epoch=1),
                                  UdpTransportConfig("127.0.0.1", fake.address[1], "127.0.0.1"),
                                  timing=Timing(chunk_deadline=60.0))).start()
        process = agent._process
        agent.push_int(np.arange(64, dtype=np.int32))
        time.sleep(0.1)
        start = time.monotonic()
        agent.close()
        assert time.monotonic() - start < 1.0  # not the 2 s join and terminate
        assert process is not None and process.exitcode == 0
