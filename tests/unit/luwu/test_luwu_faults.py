"""LuWu faults over a fake switch, with the optimizer nodes as real processes: a node killed in
the middle of a step and restarted on its state directory ends the run bit-identical to an
uninterrupted one; a killed worker is named to the others at the chunk deadline; a node on a
corrupt state directory, or one of another model, refuses to start with one line naming the file."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from innet.host.luwu.plan import LuwuPlan
from innet.host.luwu.worker import LuwuWorker, OptimizerNodeError, WorkerLostError
from innet.host.luwu.ooc_adam import AdamConfig, AdamState
from innet.host.luwu.node import MODULE, NodeConfig, OptimizerNode, committed_step
from innet.host.agent.aggregator import AggregationError, Timing
from innet.host.agent.transport import UdpTransportConfig
from testkit.fake_innet_switch import DataplaneUdpSwitch

K = 16
SIZES = (40, 70, 30)
OFFSETS = (0, 40, 110)
JOB = 3
STEPS = 5
ADAM = AdamConfig(lr=0.05, weight_decay=0.01, decoupled=True)
DEADLINE = 4.0
"""The chunk deadline (s), which the detection of each failure waits out. No process start-up
falls inside it: the workers' first chunks wait for the nodes' first pulls (``take`` has its own
60 s timeout), and the victim worker process reports "started" before the node and rank 0 begin."""


def _plan(epoch: int, nodes: int = 2) -> LuwuPlan:
    return LuwuPlan(job=JOB, num_workers=2, nodes=("o1", "o2")[:nodes], layer_sizes=SIZES, epoch=epoch,
                    window=4, k=K)


def _grad(rank: int, step: int, params: np.ndarray) -> np.ndarray:
    """Depends on the parameters the worker pulled: a wrong resume changes every later step."""
    target = np.random.default_rng([rank, step]).normal(size=params.size).astype(np.float32)
    return (params - target) * np.float32(0.5)


def _transport(port: int) -> UdpTransportConfig:
    return UdpTransportConfig("127.0.0.1", switch_port=port, local_ip="127.0.0.1")


def _spawn_node(plan: LuwuPlan, index: int, state: Path, port: int, steps: int, init: Path,
                resume_step: int | None = None) -> subprocess.Popen[str]:
    config = NodeConfig(plan, index, str(state), _transport(port), steps, ADAM, str(init), block=32,
                        resume_step=resume_step)
    return subprocess.Popen([sys.executable, "-m", MODULE, config.to_json()], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


Hook = Callable[[LuwuWorker, int, int], None]


def _workers(plan: LuwuPlan, port: int, first: int, last: int, hook: Hook | None = None
             ) -> tuple[dict[int, np.ndarray], dict[int, BaseException]]:
    """Both workers from step ``first`` to ``last``; their final pulls and their errors."""
    finals: dict[int, np.ndarray] = {}
    errors: dict[int, BaseException] = {}
    udp = UdpTransportConfig("127.0.0.1", port, "127.0.0.1")

    def run(rank: int) -> None:
        try:
            with LuwuWorker(plan, rank, udp, Timing(chunk_deadline=DEADLINE)) as w:
                for step in range(first, last):
                    params = np.concatenate([w.take(i, timeout=60) for i in range(len(SIZES))])
                    g = _grad(rank, step, params)
                    for i in reversed(range(len(SIZES))):
                        w.push(i, g[OFFSETS[i]:OFFSETS[i] + SIZES[i]])
                        if hook is not None and rank == 0:
                            hook(w, step, i)
                    w.finish_step()
                finals[rank] = np.concatenate([w.take(i, timeout=60) for i in range(len(SIZES))])
        except BaseException as error:
            errors[rank] = error

    threads = [threading.Thread(target=run, args=(r,)) for r in range(plan.num_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return finals, errors


def _finish(procs: list[subprocess.Popen[str]], timeout: float = 60) -> None:
    for p in procs:
        try:
            _, err = p.communicate(timeout=timeout)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 0, err


def _wait_for(what: str, condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout} s")
        time.sleep(0.01)


def _state(directory: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads((directory / "state.json").read_text())
        return data
    except (OSError, ValueError):
        return {}


@pytest.mark.slow
def test_a_node_killed_mid_step_resumes_and_the_run_ends_bit_identical(tmp_path: Path) -> None:
    initial = np.random.default_rng(9).normal(size=sum(SIZES)).astype(np.float32)
    init = tmp_path / "init.npy"
    np.save(init, initial)

    # the uninterrupted run
    with DataplaneUdpSwitch(K) as sw:
        sw.add_job(JOB, 2, 4, _plan(1).owner_ranges())
        port = sw.address[1]
        nodes = [_spawn_node(_plan(1), i, tmp_path / f"ref{i}", port, STEPS, init) for i in range(2)]
        try:
            reference, errors = _workers(_plan(1), port, 0, STEPS)
            assert not errors
        finally:
            _finish(nodes)

    # the same run, node o2 killed in step 3 once it has written its part of layer 2
    kill_step = 2
    killed_at: list[float] = []
    dirs = [tmp_path / "o1", tmp_path / "o2"]
    with DataplaneUdpSwitch(K) as sw:
        sw.add_job(JOB, 2, 4, _plan(1).owner_ranges())
        port = sw.address[1]
        nodes = [_spawn_node(_plan(1), i, dirs[i], port, STEPS, init) for i in range(2)]

        def kill_o2(w: LuwuWorker, step: int, layer: int) -> None:
            if step != kill_step or layer != len(SIZES) - 1:
                return
            # layer 2 (o2's shard only) is summed; o2 has started writing step 3's generation
            _wait_for("layer 2 pushed", lambda: w.stats.pushes == kill_step * len(SIZES) + 1)
            _wait_for("o2 writing step 3", lambda: _state(dirs[1]).get("step") == kill_step
                      and _state(dirs[1]).get("previous", "") is None)
            nodes[1].send_signal(signal.SIGKILL)
            killed_at.append(time.monotonic())

        try:
            finals, errors = _workers(_plan(1), port, 0, STEPS, kill_o2)
            assert killed_at and not finals
            for rank in (0, 1):
                assert isinstance(errors[rank], OptimizerNodeError), errors[rank]
                assert errors[rank].nodes == ("o2",)
                assert "optimizer node o2 (rank 3) did not answer" in str(errors[rank])
        finally:
            nodes[0].kill()  # the driver ends the member set; o1 would stop at its own deadline
            for p in nodes:
                p.wait()
        assert nodes[1].returncode == -signal.SIGKILL

        # restart: a new epoch, every node on its state directory at the common committed step.
        # o1 may have committed step 3 as well: the workers push its layers after layer 2 and
        # need no answer from o2 to do so; it then goes back one step (NodeConfig.resume_step).
        steps_done = [committed_step(d) for d in dirs]
        assert steps_done[1] == kill_step and steps_done[0] in (kill_step, kill_step + 1), steps_done
        resume = min(steps_done)
        epoch = sw.attach(JOB)
        nodes = [_spawn_node(_plan(epoch), i, dirs[i], port, STEPS - resume, init, resume_step=resume)
                 for i in range(2)]
        try:
            finals, errors = _workers(_plan(epoch), port, resume, STEPS)
            assert not errors
        finally:
            _finish(nodes)

    for rank in (0, 1):
        assert np.array_equal(finals[rank].view(np.int32), reference[0].view(np.int32)), rank
    for i in range(2):
        ours, ref = AdamState.open(dirs[i]), AdamState.open(tmp_path / f"ref{i}")
        assert ours.step == ref.step == STEPS
        for a, b in zip((ours.read(), *ours.read_moments()), (ref.read(), *ref.read_moments())):
            assert np.array_equal(a.view(np.int32), b.view(np.int32))


WORKER_SCRIPT = """
import sys, time, numpy as np
from innet.host.luwu.plan import LuwuPlan
from innet.host.luwu.worker import LuwuWorker
from innet.host.agent.transport import UdpTransportConfig
plan = LuwuPlan.from_dict(__import__("json").loads(sys.argv[1]))
w = LuwuWorker(plan, 1, UdpTransportConfig("127.0.0.1", int(sys.argv[2]), "127.0.0.1")).start()
print("started", flush=True)
for i in range(len(plan.layer_sizes)):
    w.take(i, timeout=60)
for i in reversed(range(len(plan.layer_sizes))):
    w.push(i, np.ones(plan.layer_sizes[i], np.float32))
w.finish_step()
for i in range(len(plan.layer_sizes)):
    w.take(i, timeout=60)
print("ready", flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_a_killed_worker_is_named_to_the_others_within_the_chunk_deadline(tmp_path: Path) -> None:
    plan = _plan(1, nodes=1)
    np.save(tmp_path / "init.npy", np.zeros(plan.total, np.float32))
    node_errors: list[BaseException] = []
    with DataplaneUdpSwitch(K) as sw:
        sw.add_job(JOB, 2, 4, plan.owner_ranges())
        port = sw.address[1]
        udp = UdpTransportConfig("127.0.0.1", port, "127.0.0.1")
        node = OptimizerNode(NodeConfig(plan, 0, str(tmp_path / "o1"), {}, 3, ADAM, str(tmp_path / "init.npy"),
                                        chunk_deadline=DEADLINE), udp)

        def run_node() -> None:
            try:
                node.run()
            except AggregationError as error:
                node_errors.append(error)

        node_thread = threading.Thread(target=run_node)
        victim = subprocess.Popen([sys.executable, "-c", WORKER_SCRIPT, plan.to_json(), str(port)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert victim.stdout is not None
            if (line := victim.stdout.readline()).strip() != "started":
                victim.kill()
                raise AssertionError(f"the victim worker did not start: {line!r} {victim.communicate()[1]}")
            node_thread.start()  # the deadlines start with the first pull: the victim is up by then
            with LuwuWorker(plan, 0, udp, Timing(chunk_deadline=DEADLINE)) as w:
                for i in range(len(SIZES)):
                    w.take(i, timeout=60)
                for i in reversed(range(len(SIZES))):
                    w.push(i, np.ones(SIZES[i], np.float32))
                w.finish_step()
                for i in range(len(SIZES)):
                    w.take(i, timeout=60)
                assert victim.stdout.readline().strip() == "ready"
                victim.send_signal(signal.SIGKILL)
                killed = time.monotonic()
                w.push(2, np.ones(SIZES[2], np.float32))
                with pytest.raises(WorkerLostError) as info:
                    w.wait_idle(timeout=60)
                elapsed = time.monotonic() - killed
                assert info.value.workers == (1,)
                assert str(info.value).startswith(f"luwu worker rank 1 did not answer: job {JOB} chunk ")
                assert elapsed < DEADLINE + 2.0, elapsed
        finally:
            victim.kill()
            victim.wait()
            if node_thread.ident is not None:  # started
                node_thread.join(timeout=30)
    # the node waits for both workers' REDUCE: the live one stopped at the layer's scale
    # agreement (plain lane, where the dead one is missing), so the node names both
    assert node_errors and 1 in node_errors[0].missing


def _refusal(config: NodeConfig) -> tuple[int, list[str]]:
    out = subprocess.run([sys.executable, "-m", MODULE, config.to_json()], capture_output=True, text=True,
                         timeout=60)
    return out.returncode, out.stderr.strip().splitlines()


def test_a_node_refuses_a_corrupt_state_or_another_models_naming_the_file(tmp_path: Path) -> None:
    plan = _plan(1, nodes=1)
    init = tmp_path / "init.npy"
    np.save(init, np.arange(plan.total, dtype=np.float32))
    transport = _transport(9)  # never reached: the node stops before it sends anything
    state = tmp_path / "o1"
    node = OptimizerNode(NodeConfig(plan, 0, str(state), {}, 1, ADAM, str(init)),
                         UdpTransportConfig("127.0.0.1", 9, "127.0.0.1"))
    node.state.close()

    # another model with as many parameters: other layer sizes
    other = LuwuPlan(job=JOB, num_workers=2, nodes=("o1",), layer_sizes=(70, 70), epoch=1, window=4, k=K)
    code, lines = _refusal(NodeConfig(other, 0, str(state), transport, 1, ADAM, str(init)))
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"optimizer node o1: cannot start: optimizer state {state / 'state.json'}: "
                               "belongs to model '140 parameters in 3 layers"), lines[0]

    # a member set resuming at a step this node cannot reach
    code, lines = _refusal(NodeConfig(plan, 0, str(state), transport, 1, ADAM, str(init), resume_step=3))
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].endswith(f"optimizer state {state / 'state.json'}: at step 0, cannot resume at step 3"), lines[0]

    # a corrupt parameter file (one flipped bit)
    params = state / "params.0.f32"
    raw = bytearray(params.read_bytes())
    raw[100] ^= 0x01
    params.write_bytes(bytes(raw))
    code, lines = _refusal(NodeConfig(plan, 0, str(state), transport, 1, ADAM, str(init)))
    assert code == 2 and len(lines) == 1, lines
    assert f"optimizer state {params}: checksum" in lines[0] and "the file is corrupt" in lines[0], lines[0]

    # a truncated moment file, and a garbled state.json
    (state / "exp_avg_sq.1.f32").write_bytes(b"\0" * 12)
    code, lines = _refusal(NodeConfig(plan, 0, str(state), transport, 1, ADAM, str(init)))
    assert code == 2 and len(lines) == 1 and f"{state / 'exp_avg_sq.1.f32'}: expected 560 bytes, found 12" in lines[0]
    (state / "state.json").write_text('{"format": "innet-adam/2", "size": ')
    code, lines = _refusal(NodeConfig(plan, 0, str(state), transport, 1, ADAM, str(init)))
    assert code == 2 and len(lines) == 1 and f"{state / 'state.json'}: not an innet-adam/2 file" in lines[0]
