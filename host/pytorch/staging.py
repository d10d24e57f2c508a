"""Staging flat float32 vectors between a model's device and host memory the agent can read.

The agent (and ``LuwuWorker``) read and write numpy arrays in host memory. A CPU tensor *is*
such memory: ``Stager`` hands out a view of it and copies nothing. A CUDA tensor is not:
``Stager`` copies it into a page-locked (pinned) host buffer on a side stream, so the copy
neither waits behind nor holds up kernels queued on the default stream, and copies results
back the same way. Ordering, per direction:

- device -> host (``mark`` then ``to_host``): ``mark`` records an event on the stream that
  produced the tensor (the caller's current stream, e.g. backward's); the side stream waits
  for that event before it copies, and the host waits for the copy (an event on the side
  stream) before numpy reads the buffer. ``mark`` runs where the tensor is produced (DDP's
  hook, autograd's thread); ``to_host`` may run on another thread.
- host -> device (``to_device``): the pinned buffer is copied on the side stream and either
  the host waits for it (``wait="host"``: a DDP future is completed only after the bucket
  holds the result) or the consumer's stream waits for the event (``wait="stream"``:
  forward's kernels queue behind the copy and the host goes on). A pinned buffer is reused
  only after the copy that read it has finished.

The device runtime is behind ``DeviceOps`` (``CudaOps`` for CUDA) so that the staging logic
runs in CPU tests with a recording fake (``tests/unit/test_staging.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch


class DeviceOps(Protocol):
    """What staging needs of a device runtime (streams, events, pinned memory, copies)."""

    def current_stream(self, device: torch.device) -> Any:
        """The stream the caller's kernels are queued on now."""

    def side_stream(self, device: torch.device) -> Any:
        """A stream of its own for the copies (the same one on every call)."""

    def record(self, stream: Any) -> Any:
        """An event that completes when everything queued on ``stream`` so far has run."""

    def wait(self, stream: Any, event: Any) -> None:
        """Make ``stream`` wait for ``event`` (no host blocking)."""

    def synchronize(self, event: Any) -> None:
        """Block the host until ``event`` has completed."""

    def copy(self, dst: torch.Tensor, src: torch.Tensor, stream: Any) -> None:
        """Queue ``dst.copy_(src)`` on ``stream`` (asynchronous where the runtime allows)."""

    def pinned(self, numel: int) -> torch.Tensor:
        """A page-locked float32 host buffer of ``numel`` values."""


class CudaOps:
    """``DeviceOps`` of torch.cuda."""

    def __init__(self) -> None:
        self._streams: dict[torch.device, Any] = {}

    def current_stream(self, device: torch.device) -> Any:
        return torch.cuda.current_stream(device)

    def side_stream(self, device: torch.device) -> Any:
        if device not in self._streams:
            self._streams[device] = torch.cuda.Stream(device)
        return self._streams[device]

    def record(self, stream: Any) -> Any:
        event = torch.cuda.Event()
        event.record(stream)
        return event

    def wait(self, stream: Any, event: Any) -> None:
        stream.wait_event(event)

    def synchronize(self, event: Any) -> None:
        event.synchronize()

    def copy(self, dst: torch.Tensor, src: torch.Tensor, stream: Any) -> None:
        with torch.cuda.stream(stream):
            dst.copy_(src, non_blocking=True)

    def pinned(self, numel: int) -> torch.Tensor:
        return torch.empty(numel, dtype=torch.float32, pin_memory=True)


@dataclass
class _Buffer:
    """One pinned buffer and the event of the last copy that used it (None: free)."""

    tensor: torch.Tensor
    busy: Any = None


@dataclass
class Stager:
    """Host views of device vectors, and back (see module docstring).

    ``staged`` None: stage exactly the tensors that are not on the CPU; True forces the
    device path (with a fake ``ops``, how CPU tests exercise it)."""

    ops: DeviceOps | None = None
    staged: bool | None = None
    copies: int = 0
    """Device <-> host copies issued (0 for CPU tensors)."""
    _buffers: dict[str, _Buffer] = field(default_factory=dict)

    def _ops(self) -> DeviceOps:
        if self.ops is None:
            self.ops = CudaOps()
        return self.ops

    def needs_staging(self, where: torch.Tensor | torch.device) -> bool:
        """Whether a tensor (or any tensor on a device) goes through pinned buffers."""
        device = where.device if isinstance(where, torch.Tensor) else where
        return self.staged if self.staged is not None else device.type != "cpu"

    def _buffer(self, slot: str, numel: int) -> torch.Tensor:
        """Pinned buffer ``slot`` with room for ``numel`` values, reused (grown, never
        shrunk) once the copy that last used it has completed."""
        ops = self._ops()
        buf = self._buffers.get(slot)
        if buf is not None and buf.busy is not None:
            ops.synchronize(buf.busy)
            buf.busy = None
        if buf is None or buf.tensor.numel() < numel:
            buf = self._buffers[slot] = _Buffer(ops.pinned(numel))
        return buf.tensor[:numel]

    def mark(self, tensor: torch.Tensor) -> Any:
        """Where ``tensor`` is produced: an event after its producer's kernels (None on CPU)."""
        if not self.needs_staging(tensor):
            return None
        ops = self._ops()
        return ops.record(ops.current_stream(tensor.device))

    def to_host(self, tensor: torch.Tensor, ready: Any = None, slot: str = "in") -> np.ndarray:
        """A float32 numpy vector with ``tensor``'s values: a view of a contiguous float32
        CPU tensor, else a pinned buffer ``slot`` filled on the side stream after ``ready``
        (``mark``'s event) and waited for."""
        flat = tensor.detach().reshape(-1)
        if not self.needs_staging(tensor):
            return flat.to(torch.float32).numpy()  # a view when already float32
        ops = self._ops()
        side = ops.side_stream(tensor.device)
        if ready is not None:
            ops.wait(side, ready)
        host = self._buffer(slot, flat.numel())
        ops.copy(host, flat, side)
        self.copies += 1
        done = ops.record(side)
        ops.synchronize(done)
        return host.numpy()

    def host_buffer(self, tensor: torch.Tensor, slot: str = "out") -> np.ndarray | None:
        """A pinned float32 buffer the size of ``tensor`` to receive a result in (None when
        ``tensor`` needs no staging: write the result into ``to_host``'s view instead)."""
        if not self.needs_staging(tensor):
            return None
        return self._buffer(slot, tensor.numel()).numpy()

    def to_device(self, host: np.ndarray, out: torch.Tensor, wait: str = "host", slot: str = "out") -> None:
        """Copy float32 ``host`` into ``out`` (any device, ``out``'s dtype). ``wait``: "host"
        blocks until ``out`` holds the values; "stream" makes the current stream of ``out``'s
        device wait for the copy instead (the host goes on)."""
        flat = out.detach().view(-1)
        if not self.needs_staging(out):
            src = torch.from_numpy(host)
            if src.data_ptr() != flat.data_ptr() or src.dtype != flat.dtype:
                flat.copy_(src)
            return
        ops = self._ops()
        buf = self._buffers.get(slot)
        pinned = buf.tensor[:host.size] if buf is not None and host.ctypes.data == buf.tensor.data_ptr() else None
        if pinned is None:  # pageable memory: through the pinned buffer, so the copy can be async
            pinned = self._buffer(slot, host.size)
            pinned.copy_(torch.from_numpy(host))
        side = ops.side_stream(out.device)
        ops.wait(side, ops.record(ops.current_stream(out.device)))  # out may still be read by queued kernels
        ops.copy(flat, pinned, side)
        self.copies += 1
        done = ops.record(side)
        self._buffers[slot].busy = done
        if wait == "host":
            ops.synchronize(done)
            self._buffers[slot].busy = None
        else:
            ops.wait(ops.current_stream(out.device), done)
