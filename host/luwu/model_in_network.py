"""LuWu mode for a torch model: layer-wise pull before forward, push during backward.

    worker = LuwuWorker(plan, rank, transport).start()      # plan sizes: layer_table(model)
    mnet = ModelInNetwork(model, worker)
    for x, y in batches:
        loss = loss_fn(mnet.model(x), y)
        loss.backward()
        mnet.step()                                          # replaces optimizer.step()

A *layer* is a module with parameters of its own (``recurse=False``), in ``model.modules()``
order, which must be the order forward uses them (true for ``nn.Sequential`` stacks). A
forward pre-hook materializes the layer's parameters from the pulled vector (waiting only
if the pull has not arrived: the worker prefetches the next layers in the background);
``register_post_accumulate_grad_hook`` hands each layer's gradient to the worker as soon as
autograd has it, clears ``.grad`` and, with ``drop=True``, frees the parameters (they are
needed until then: backward uses them). No optimizer state exists on the worker; between
steps it holds no parameters (``resident_bytes`` is 0 after ``step``).

Limits: every parameter is used once per forward (no weight tying across layers); every
layer's parameters all require gradients.

A model on a CUDA device works the same: gradients are staged to host through a pinned
buffer on a side stream before they are pushed, and pulled parameters go to the device on
the side stream with forward's stream waiting for the copy (``innet.host.pytorch.staging``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from innet.host.luwu.worker import LuwuWorker
from innet.host.pytorch.staging import Stager


@dataclass(frozen=True)
class Layer:
    name: str
    module: nn.Module
    params: tuple[nn.Parameter, ...]
    shapes: tuple[torch.Size, ...]

    @property
    def size(self) -> int:
        return sum(int(np.prod(s)) for s in self.shapes)


def layer_table(model: nn.Module) -> list[Layer]:
    """The model's layers (modules owning parameters), in ``modules()`` order."""
    out = []
    for name, module in model.named_modules():
        params = tuple(p for p in module.parameters(recurse=False))
        if params:
            out.append(Layer(name or "<root>", module, params, tuple(p.shape for p in params)))
    return out


def flat_parameters(model: nn.Module) -> np.ndarray:
    """The whole model as one float32 vector in layer order (the nodes' initial parameters)."""
    return np.concatenate([p.detach().to("cpu", torch.float32).reshape(-1).numpy()
                           for layer in layer_table(model) for p in layer.params])


class ModelInNetwork:
    """See module docstring."""

    def __init__(self, model: nn.Module, worker: LuwuWorker, drop: bool = True,
                 pull_timeout: float | None = None, overlap: bool = True, stager: Stager | None = None) -> None:
        self.model = model
        self.worker = worker
        self.stager = stager if stager is not None else Stager()
        """Host staging of a device model's gradients and parameters (CPU: no copies)."""
        self.drop = drop
        self.overlap = overlap
        """False: push every layer after backward and wait for every pull before the next
        forward (the serialized baseline the overlap is measured against)."""
        self._deferred: list[tuple[int, Any]] = []
        self.pull_timeout = pull_timeout
        self.layers = layer_table(model)
        self.devices = [layer.params[0].device for layer in self.layers]
        """Where each layer's parameters live (kept while they are dropped)."""
        sizes = tuple(layer.size for layer in self.layers)
        if sizes != worker.plan.layer_sizes:
            raise ValueError(f"ModelInNetwork: the model's layer sizes {list(sizes)} differ from the plan's "
                             f"{list(worker.plan.layer_sizes)}")
        self.version = 0
        """Steps done; a layer is materialized for one version."""
        self._have: dict[int, int] = {}
        """Layer -> version of the parameters it holds now."""
        self._pending: dict[int, dict[int, torch.Tensor]] = {}
        self.peak_resident_bytes = 0
        self._handles: list[Any] = []
        for i, layer in enumerate(self.layers):
            self._handles.append(layer.module.register_forward_pre_hook(self._pre_hook(i)))
            for j, p in enumerate(layer.params):
                self._handles.append(p.register_post_accumulate_grad_hook(self._grad_hook(i, j)))
        if drop:
            for i in range(len(self.layers)):
                self._release(i)

    # -- hooks ----------------------------------------------------------------------------

    def _pre_hook(self, i: int) -> Any:
        def hook(module: nn.Module, args: Any) -> None:
            if self._have.get(i) == self.version:
                return
            pulled = self.worker.take(i, self.pull_timeout)
            vec = torch.from_numpy(pulled)
            if self.stager.needs_staging(self.devices[i]):
                vec = torch.empty(pulled.size, dtype=torch.float32, device=self.devices[i])
                self.stager.to_device(pulled, vec, wait="stream", slot=f"pull{i}")
            at = 0
            with torch.no_grad():
                for p, shape in zip(self.layers[i].params, self.layers[i].shapes):
                    n = int(np.prod(shape))
                    p.data = vec[at:at + n].view(shape)
                    at += n
            self._have[i] = self.version
            self.peak_resident_bytes = max(self.peak_resident_bytes, self.resident_bytes)
        return hook

    def _grad_hook(self, i: int, j: int) -> Any:
        def hook(p: torch.Tensor) -> None:
            assert p.grad is not None
            pending = self._pending.setdefault(i, {})
            pending[j] = p.grad.detach().reshape(-1).clone()
            p.grad = None
            if len(pending) == len(self.layers[i].params):
                flat = torch.cat([pending[k] for k in range(len(pending))])
                del self._pending[i]
                host = self.stager.to_host(flat, self.stager.mark(flat))
                if self.overlap:
                    self.worker.push(i, host)  # push copies: the staging buffer is free again
                else:
                    self._deferred.append((i, host.copy() if self.stager.needs_staging(flat) else host))
                if self.drop:
                    self._release(i)
        return hook

    def _release(self, i: int) -> None:
        for p in self.layers[i].params:
            p.data = torch.empty(0, dtype=p.dtype, device=self.devices[i])
        self._have.pop(i, None)

    # -- the step -------------------------------------------------------------------------

    def step(self) -> None:
        """End of the step (instead of ``optimizer.step()``): layers without a gradient
        push zeros; the next step's parameters are pulled from now on."""
        self._pending.clear()
        for i, g in self._deferred:
            self.worker.push(i, g)
        self._deferred.clear()
        self.worker.finish_step()
        if not self.overlap:
            self.worker.wait_idle()
        self.version += 1
        if self.drop:
            for i in range(len(self.layers)):
                self._release(i)

    @property
    def resident_bytes(self) -> int:
        """Bytes of parameter tensors the worker holds now."""
        return sum(p.numel() * p.element_size() for layer in self.layers for p in layer.params)

    def close(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
