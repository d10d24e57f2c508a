"""LuWu over a fake switch: workers push layer gradients, sharded optimizer nodes run Adam and
publish parameters bit for bit; a dead node is named by the workers."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from innet.wire import quantize as qz
from innet.host.luwu.plan import LuwuPlan, LuwuPlanError, pull_order, schedule
from innet.host.luwu.worker import LuwuWorker, OptimizerNodeError
from innet.host.luwu.ooc_adam import AdamConfig, AdamState
from innet.host.luwu.node import NodeConfig, OptimizerNode, read_status
from innet.host.agent.aggregator import Timing
from innet.host.agent.transport import UdpTransportConfig
from testkit.fake_innet_switch import DataplaneUdpSwitch

K = 16


def _plan(workers: int, nodes: int, sizes: tuple[int, ...]) -> LuwuPlan:
    return LuwuPlan(job=3, num_workers=workers, nodes=tuple(f"o{i + 1}" for i in range(nodes)),
                    layer_sizes=sizes, epoch=1, window=4, k=K)


def test_plan_shards_schedule_and_errors() -> None:
    plan = _plan(2, 2, (5, 130, 7))
    assert plan.shards == ((0, 80), (80, 142))  # 9 chunks of 16: 5 + 4
    assert plan.overlap(1, 0) == (0, 5, 75) and plan.overlap(1, 1) == (75, 0, 55)
    assert plan.overlap(0, 1) is None and plan.node_name(3) == "o2" and plan.node_name(1) is None
    assert list(schedule(2, 1)) == [("pull", 0), ("pull", 1), ("push", 1), ("push", 0), ("pull", 0), ("pull", 1)]
    assert LuwuPlan.from_dict(__import__("json").loads(plan.to_json())) == plan
    # the wire: segments of 1 + n values padded to chunks, in model order; a node's are consecutive
    assert [(g.layer, g.node, g.at, g.local, g.n, g.first_chunk, g.chunks) for g in plan.segments] == [
        (0, 0, 0, 0, 5, 0, 1), (1, 0, 0, 5, 75, 1, 5), (1, 1, 75, 0, 55, 6, 4), (2, 1, 0, 55, 7, 10, 1)]
    assert [(o.rank, o.first_chunk, o.chunks) for o in plan.owner_ranges()] == [(2, 0, 6), (3, 6, 5)]
    assert plan.wire_chunks == 11 and [g.node for g in plan.layer_segments(1)] == [0, 1]
    with pytest.raises(LuwuPlanError, match=r"node\(s\) o3 own no parameters"):
        _plan(2, 3, (20, 10))
    with pytest.raises(LuwuPlanError, match="leave no slot for the plain lane"):
        LuwuPlan(job=3, num_workers=2, nodes=("o1", "o2"), layer_sizes=(40, 40), epoch=1, window=2, k=K)
    with pytest.raises(LuwuPlanError, match="pull job 3 is the push job"):
        replace(plan, pull_job=3)
    assert plan.timing(Timing()) == Timing() and replace(plan, outstanding=3).timing(Timing()).max_outstanding == 3
    with pytest.raises(LuwuPlanError, match="outstanding -1 chunks"):
        replace(plan, outstanding=-1)
    with pytest.raises(LuwuPlanError, match="piece 1 chunks"):
        replace(plan, piece=1)
    with pytest.raises(ValueError, match="a duplex plan needs a pull transport"):
        LuwuWorker(replace(plan, pull_job=4), 0, UdpTransportConfig("127.0.0.1", 9, "127.0.0.1"))
    with pytest.raises(LuwuPlanError, match="needs at least one optimizer node"):
        _plan(2, 0, (5,))
    with pytest.raises(LuwuPlanError, match=r"31 workers \+ 2 nodes must be 1\.\.32 members"):
        _plan(31, 2, (5,))


def _adam_reference(initial: np.ndarray, mean_grads: list[np.ndarray], config: AdamConfig,
                    tmp: Path) -> np.ndarray:
    state = AdamState.create(tmp, initial, config)
    for g in mean_grads:
        state.update(0, g)
        state.commit_step()
    return state.read()


@pytest.mark.parametrize("duplex", [False, True], ids=["one-job", "duplex"])
def test_sharded_nodes_train_like_adam_on_the_mean_gradient(tmp_path: Path, duplex: bool) -> None:
    n, nodes, steps = 2, 2, 3
    sizes = (5, 130, 7)
    plan = _plan(n, nodes, sizes)
    if duplex:  # pulls on job 4, segments of at most 3 chunks (layer 1's parts are 2 pieces each)
        plan = replace(plan, pull_job=4, piece=3, outstanding=2)
        assert [(g.layer, g.node, g.n, g.chunks) for g in plan.segments] == [
            (0, 0, 5, 1), (1, 0, 47, 3), (1, 0, 28, 2), (1, 1, 47, 3), (1, 1, 8, 1), (2, 1, 7, 1)]
        assert [(g.layer, g.first_chunk) for g in pull_order(plan)] == [
            (2, 10), (1, 1), (1, 4), (1, 6), (1, 9), (0, 0)]
    rng = np.random.default_rng(0)
    initial = rng.normal(size=plan.total).astype(np.float32)
    np.save(tmp_path / "init.npy", initial)
    grads = [[rng.normal(size=plan.total).astype(np.float32) for _ in range(n)] for _ in range(steps)]
    adam = AdamConfig(lr=0.01, weight_decay=0.01, decoupled=True)
    seen: list[list[np.ndarray]] = [[] for _ in range(n)]
    errors: list[BaseException] = []
    with DataplaneUdpSwitch(K) as sw:
        sw.add_job(plan.job, plan.num_workers, plan.window, plan.owner_ranges())
        if duplex:
            sw.add_job(4, plan.num_workers, plan.window, plan.owner_ranges(), slot_base=plan.window)
        udp = UdpTransportConfig("127.0.0.1", sw.address[1], "127.0.0.1")
        pull = udp if duplex else None  # an ephemeral port of its own per agent
        node_objs = [OptimizerNode(NodeConfig(plan, i, str(tmp_path / f"o{i}"), {}, steps, adam,
                                              str(tmp_path / "init.npy"), block=32), udp, pull)
                     for i in range(nodes)]

        def worker(rank: int) -> None:
            try:
                with LuwuWorker(plan, rank, udp, pull_transport=pull) as w:
                    for step in range(steps + 1):
                        seen[rank].append(np.concatenate([w.take(i, timeout=30) for i in range(len(sizes))]))
                        if step == steps:
                            break
                        g = grads[step][rank]
                        for i in reversed(range(len(sizes))):  # backward order; any order works
                            a = plan.offsets[i]
                            w.push(i, g[a:a + sizes[i]])
                        w.finish_step()
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=o.run) for o in node_objs]
        threads += [threading.Thread(target=worker, args=(r,)) for r in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert not errors
    # parameters reach the workers bit for bit, the same on every worker
    assert np.array_equal(seen[0][0], initial)
    for step in range(steps + 1):
        assert np.array_equal(seen[0][step].view(np.int32), seen[1][step].view(np.int32))
    # the nodes ran Adam on the mean of the quantized gradients: within the quantization bound
    # of Adam on the exact mean (Adam's first steps move each weight by ~lr whatever the scale)
    expected = _adam_reference(initial, [np.mean(g, axis=0) for g in grads], adam, tmp_path / "ref")
    np.testing.assert_allclose(seen[0][-1], expected, rtol=0, atol=1e-4)
    for i in range(nodes):
        status = read_status(tmp_path / f"o{i}")
        assert status["state"] == "done" and status["step"] == steps and status["name"] == f"o{i + 1}"
        assert status["shard"] == list(plan.shards[i])


def test_a_dead_optimizer_node_is_named_within_the_deadline(tmp_path: Path) -> None:
    plan = _plan(2, 1, (40,))
    with DataplaneUdpSwitch(K) as sw:
        sw.add_job(plan.job, plan.num_workers, plan.window, plan.owner_ranges())
        udp = UdpTransportConfig("127.0.0.1", sw.address[1], "127.0.0.1")
        timing = Timing(chunk_deadline=1.5)
        workers = [LuwuWorker(plan, r, udp, timing).start() for r in range(2)]
        try:
            start = time.monotonic()
            with pytest.raises(OptimizerNodeError, match=r"optimizer node o1 \(rank 2\) did not answer") as info:
                workers[0].take(0, timeout=20)
            assert time.monotonic() - start < 1.5 + 2.0
            assert info.value.nodes == ("o1",)
        finally:
            for w in workers:
                w.close()


def test_a_layer_pushed_early_is_not_replaced_by_zeros_at_the_step_end(tmp_path: Path) -> None:
    """finish_step fills zeros only for layers not pushed in this step, even when the comm
    thread has already sent some of them (regression: it refilled those with zeros)."""
    plan = _plan(1, 1, (8, 8))
    np.save(tmp_path / "init.npy", np.zeros(16, np.float32))
    with DataplaneUdpSwitch(K) as sw:
        sw.add_job(plan.job, plan.num_workers, plan.window, plan.owner_ranges())
        udp = UdpTransportConfig("127.0.0.1", sw.address[1], "127.0.0.1")
        node = OptimizerNode(NodeConfig(plan, 0, str(tmp_path / "o"), {}, 2, AdamConfig(lr=0.1),
                                        str(tmp_path / "init.npy")), udp)
        t = threading.Thread(target=node.run)
        t.start()
        with LuwuWorker(plan, 0, udp) as w:
            for _ in range(2):
                w.take(0, timeout=20), w.take(1, timeout=20)
                w.push(1, np.ones(8, np.float32))
                deadline = time.monotonic() + 10
                while w.stats.pushes < 1 + 2 * _ and time.monotonic() < deadline:  # layer 1 is sent
                    time.sleep(0.01)
                w.push(0, np.ones(8, np.float32))
                w.finish_step()
            final = np.concatenate([w.take(0, timeout=20), w.take(1, timeout=20)])
        t.join(timeout=20)
    # Adam moves every weight with a positive gradient by -lr per step: both layers, both steps
    np.testing.assert_allclose(final, -0.2, atol=1e-5)


def test_a_restarted_node_resumes_from_its_state_on_disk(tmp_path: Path) -> None:
    sizes = (20, 9)
    rng = np.random.default_rng(5)
    initial = rng.normal(size=29).astype(np.float32)
    np.save(tmp_path / "init.npy", initial)
    grads = [rng.normal(size=29).astype(np.float32) for _ in range(3)]
    adam = AdamConfig(lr=0.05)
    seen = []
    with DataplaneUdpSwitch(K) as sw:
        sw.add_job(3, 1, 4, LuwuPlan(job=3, num_workers=1, nodes=("o1",), layer_sizes=sizes, epoch=1, window=4,
                                     k=K).owner_ranges())
        udp = UdpTransportConfig("127.0.0.1", sw.address[1], "127.0.0.1")
        for session, steps in enumerate((2, 1)):
            epoch = 1 if session == 0 else sw.attach(3)  # a new member set after the restart
            plan = LuwuPlan(job=3, num_workers=1, nodes=("o1",), layer_sizes=sizes, epoch=epoch, window=4, k=K)
            node = OptimizerNode(NodeConfig(plan, 0, str(tmp_path / "o1"), {}, steps, adam,
                                            str(tmp_path / "init.npy")), udp)
            t = threading.Thread(target=node.run)
            t.start()
            with LuwuWorker(plan, 0, udp) as w:
                for _ in range(steps):
                    seen.append(np.concatenate([w.take(0, timeout=20), w.take(1, timeout=20)]))
                    g = grads[len(seen) - 1]
                    w.push(1, g[20:])
                    w.push(0, g[:20])
                    w.finish_step()
                final = np.concatenate([w.take(0, timeout=20), w.take(1, timeout=20)])
            t.join(timeout=20)
            assert read_status(tmp_path / "o1")["step"] == (2 if session == 0 else 3)
    expected = _adam_reference(initial, grads, adam, tmp_path / "ref")
    np.testing.assert_allclose(final, expected, rtol=0, atol=1e-5)
    # the restarted node's first pull publishes what it had committed before the restart
    np.testing.assert_allclose(seen[2], _adam_reference(initial, grads[:2], adam, tmp_path / "ref2"),
                               rtol=0, atol=1e-5)
