"""Host staging of device tensors (innet.host.pytorch.staging), on CPU through a recording
fake of the device runtime, and on CUDA where a device is present."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (optional dependency) is not installed")

from innet.host.pytorch.staging import Stager  # noqa: E402

NO_CUDA = "no CUDA device (torch.cuda.is_available() is False)"


@dataclass
class Event:
    stream: str
    seq: int
    done: bool = False


@dataclass
class RecordingOps:
    """DeviceOps that copy at once (CPU tensors) and log every call in order."""

    log: list[tuple[Any, ...]] = field(default_factory=list)
    pinned_allocs: list[int] = field(default_factory=list)
    current: str = "default"

    def current_stream(self, device: Any) -> str:
        return self.current

    def side_stream(self, device: Any) -> str:
        return "side"

    def record(self, stream: str) -> Event:
        event = Event(stream, len(self.log))
        self.log.append(("record", stream, event.seq))
        return event

    def wait(self, stream: str, event: Event) -> None:
        self.log.append(("wait", stream, event.seq))

    def synchronize(self, event: Event) -> None:
        event.done = True
        self.log.append(("sync", event.seq))

    def copy(self, dst: Any, src: Any, stream: str) -> None:
        dst.copy_(src)
        self.log.append(("copy", stream, tuple(dst.shape)))

    def pinned(self, numel: int) -> Any:
        self.pinned_allocs.append(numel)
        return torch.empty(numel, dtype=torch.float32)

    def kinds(self) -> list[tuple[Any, ...]]:
        return [entry[:2] for entry in self.log]


def test_cpu_tensors_are_views_and_nothing_is_copied() -> None:
    stager = Stager()
    t = torch.arange(10, dtype=torch.float32)
    assert stager.mark(t) is None
    host = stager.to_host(t)
    assert host.ctypes.data == t.data_ptr()  # the tensor's own memory
    assert stager.host_buffer(t) is None
    host *= 2  # a result written into the view is in the tensor
    stager.to_device(host, t)
    assert torch.equal(t, 2 * torch.arange(10, dtype=torch.float32))
    assert stager.copies == 0 and stager.ops is None  # no device runtime touched


def test_cpu_tensor_of_another_dtype_is_converted_and_written_back() -> None:
    stager = Stager()
    t = torch.arange(6, dtype=torch.float64)
    host = stager.to_host(t)
    assert host.dtype == np.float32 and host.ctypes.data != t.data_ptr()
    stager.to_device(host + 1, t)
    assert torch.equal(t, torch.arange(1, 7, dtype=torch.float64))


def test_device_to_host_waits_for_the_producer_then_copies_on_the_side_stream() -> None:
    ops = RecordingOps()
    stager = Stager(ops=ops, staged=True)
    t = torch.linspace(-1, 1, 100)
    ready = stager.mark(t)
    assert ops.log == [("record", "default", 0)]  # on the producer's stream, before anything else
    host = stager.to_host(t, ready)
    np.testing.assert_array_equal(host, t.numpy())
    assert host.ctypes.data != t.data_ptr()  # the pinned buffer, not the tensor
    assert ops.kinds()[1:] == [("wait", "side"), ("copy", "side"), ("record", "side"), ("sync", 3)]
    assert ops.log[1] == ("wait", "side", 0)  # the side stream waits for the producer's event
    assert ops.pinned_allocs == [100] and stager.copies == 1


def test_host_to_device_host_wait_completes_before_returning() -> None:
    ops = RecordingOps()
    stager = Stager(ops=ops, staged=True)
    out = torch.zeros(50)
    buf = stager.host_buffer(out)
    assert buf is not None
    buf[:] = np.arange(50, dtype=np.float32)
    ops.log.clear()
    stager.to_device(buf, out, wait="host")
    assert torch.equal(out, torch.arange(50, dtype=torch.float32))
    # the copy waits for kernels still reading ``out`` on the default stream, then the host syncs
    assert ops.kinds() == [("record", "default"), ("wait", "side"), ("copy", "side"), ("record", "side"),
                           ("sync", 3)]
    assert ops.pinned_allocs == [50]  # the result went from the pinned buffer itself, no second one


def test_host_to_device_stream_wait_leaves_the_host_free_and_reuse_waits_for_the_copy() -> None:
    ops = RecordingOps()
    stager = Stager(ops=ops, staged=True)
    out = torch.zeros(20)
    pageable = np.arange(20, dtype=np.float32)
    stager.to_device(pageable, out, wait="stream", slot="pull0")
    assert torch.equal(out, torch.from_numpy(pageable))
    assert not any(entry[0] == "sync" for entry in ops.log)  # host not blocked
    assert ops.log[-1][:2] == ("wait", "default")  # forward's stream waits for the copy
    copy_event = ops.log[-2][2]
    ops.log.clear()
    stager.to_device(pageable + 1, out, wait="stream", slot="pull0")
    assert ops.log[0] == ("sync", copy_event)  # the pinned buffer is reused only after its last copy
    assert torch.equal(out, torch.from_numpy(pageable + 1))
    assert ops.pinned_allocs == [20]


def test_pinned_buffers_grow_and_are_reused() -> None:
    ops = RecordingOps()
    stager = Stager(ops=ops, staged=True)
    for n in (10, 10, 5, 30, 30):
        host = stager.to_host(torch.ones(n))
        assert host.size == n and np.all(host == 1)
    assert ops.pinned_allocs == [10, 30]


@pytest.mark.parametrize("device", ["fake", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason=NO_CUDA))])
def test_ddp_hook_staged_and_unstaged_ranks_agree(device: str) -> None:
    """Rank 0's buckets go through the staging path (a CPU tensor with the recording fake, or
    a real CUDA bucket), rank 1's are CPU views: both get the same average, within the
    quantization bound of the mean."""
    from concurrent.futures import ThreadPoolExecutor

    from innet.wire import quantize as qz
    from innet.host.agent.agent import Agent, AgentConfig
    from innet.host.agent.aggregator import JobConfig
    from innet.host.pytorch import InnetHookState, innet_allreduce_hook
    from innet.host.agent.transport import UdpTransportConfig
    from testkit.fake_innet_switch import FakeInnetSwitch, FakeUdpSwitch

    class Bucket:
        def __init__(self, t: Any) -> None:
            self.t = t

        def buffer(self) -> Any:
            return self.t

    n, k = 2, 64
    fake = FakeInnetSwitch(k)
    fake.add_job(1, n, slot_count=8)
    rng = np.random.default_rng(5)
    grads = [rng.normal(scale=0.1, size=700).astype(np.float32) for _ in range(n)]
    ops = RecordingOps()
    with FakeUdpSwitch(fake) as sw:
        udp = UdpTransportConfig("127.0.0.1", sw.address[1], "127.0.0.1")
        agents = [Agent(AgentConfig(JobConfig(1, r, n, 8, k, epoch=1), udp)).start() for r in range(n)]
        try:
            staged = Stager(ops=ops, staged=True) if device == "fake" else Stager()
            states = [InnetHookState(agents[0], n, stager=staged), InnetHookState(agents[1], n)]

            def rank(r: int) -> np.ndarray:
                bucket = torch.from_numpy(grads[r].copy())
                if r == 0 and device == "cuda":
                    bucket = bucket.cuda()
                result = innet_allreduce_hook(states[r], Bucket(bucket)).wait()
                assert result.data_ptr() == bucket.data_ptr()  # DDP's bucket, written in place
                return result.cpu().numpy().copy()

            with ThreadPoolExecutor(n) as pool:
                out = list(pool.map(rank, range(n)))
        finally:
            for a in agents:
                a.close()
    np.testing.assert_array_equal(out[0], out[1])
    bound = max(float(np.max(np.abs(g))) for g in grads)
    f = qz.sum_frac_bits(bound, n)
    assert np.max(np.abs(out[0] - np.mean(grads, axis=0))) <= 2.0 ** -(f + 1) + 4 * np.finfo(np.float32).eps * bound
    assert states[0].stager.copies == 2 and states[1].stager.copies == 0  # in and out; none for the CPU rank
    if device == "fake":
        assert [e[:2] for e in ops.log if e[0] == "copy"] == [("copy", "side"), ("copy", "side")]


class _StubWorker:
    """What ModelInNetwork uses of LuwuWorker: pulls hand out fixed parameters, pushes are kept."""

    def __init__(self, params: list[np.ndarray]) -> None:
        from innet.host.luwu.plan import LuwuPlan

        self.params = params
        self.plan = LuwuPlan(job=1, num_workers=1, nodes=("o1",), layer_sizes=tuple(p.size for p in params), epoch=1)
        self.pushed: dict[int, np.ndarray] = {}

    def take(self, layer: int, timeout: float | None = None) -> np.ndarray:
        return self.params[layer].copy()

    def push(self, layer: int, grad: np.ndarray) -> None:
        self.pushed[layer] = np.array(grad, dtype=np.float32)

    def finish_step(self) -> None:
        pass

    def wait_idle(self) -> None:
        pass


def _model_and_reference() -> tuple[Any, Any, list[np.ndarray], Any, Any]:
    from innet.host.luwu.model_in_network import flat_parameters, layer_table

    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    ref = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    ref.load_state_dict(model.state_dict())
    flat = flat_parameters(model)
    sizes = [layer.size for layer in layer_table(model)]
    params = np.split(flat, np.cumsum(sizes)[:-1])
    return model, ref, params, torch.randn(4, 8), torch.tensor([0, 1, 2, 0])


def test_model_in_network_staged_path_pushes_the_same_gradients() -> None:
    from innet.host.luwu.model_in_network import ModelInNetwork

    model, ref, params, x, y = _model_and_reference()
    ops = RecordingOps()
    worker = _StubWorker(params)
    mnet = ModelInNetwork(model, worker, stager=Stager(ops=ops, staged=True))  # type: ignore[arg-type]
    torch.nn.functional.cross_entropy(mnet.model(x), y).backward()
    pulls = [e for e in ops.log if e[0] in ("copy", "wait", "sync")]
    assert ("wait", "default") in [e[:2] for e in pulls]  # forward's stream waits for the pulled parameters
    mnet.step()
    torch.nn.functional.cross_entropy(ref(x), y).backward()
    expected = [torch.cat([p.grad.reshape(-1) for p in layer.parameters()]).numpy() for layer in (ref[0], ref[2])]
    for i, g in enumerate(expected):
        np.testing.assert_allclose(worker.pushed[i], g, rtol=1e-6, atol=1e-7)
    assert mnet.resident_bytes == 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_cuda_tensors_round_trip_through_pinned_buffers() -> None:
    stager = Stager()
    t = torch.randn(1 << 16, device="cuda")
    host = stager.to_host(t, stager.mark(t))
    np.testing.assert_array_equal(host, t.cpu().numpy())
    out = torch.empty_like(t)
    buf = stager.host_buffer(out)
    assert buf is not None
    buf[:] = host * 2
    stager.to_device(buf, out, wait="host")
    assert torch.equal(out.cpu(), t.cpu() * 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_model_in_network_on_cuda_pushes_the_cpu_gradients() -> None:
    from innet.host.luwu.model_in_network import ModelInNetwork

    model, ref, params, x, y = _model_and_reference()
    worker = _StubWorker(params)
    mnet = ModelInNetwork(model.cuda(), worker)  # type: ignore[arg-type]
    torch.nn.functional.cross_entropy(mnet.model(x.cuda()), y.cuda()).backward()
    mnet.step()
    torch.nn.functional.cross_entropy(ref(x), y).backward()
    expected = [torch.cat([p.grad.reshape(-1) for p in layer.parameters()]).numpy() for layer in (ref[0], ref[2])]
    for i, g in enumerate(expected):
        np.testing.assert_allclose(worker.pushed[i], g, rtol=1e-5, atol=1e-6)
