"""Pipeline stages of an OP-DAG: contiguous slices of the topological order.

Boundary ``b`` lies between stage ``b`` and ``b + 1``; the values crossing it are every value
produced at or before stage ``b`` and read after it. A value produced in stage 0 and read in
stage 2 (a residual) therefore crosses boundary 0 *and* boundary 1: stage 1 passes it on,
and on the way back adds the gradient it got from stage 2 to its own. Stages only ever talk
to their neighbours, which is what a chain of sites joined by WAN links needs, and the bytes
on each boundary are what the planner charges to the link it is placed on.

Feeds (inputs and labels) are local to every stage: each site reads the same batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from innet.host.geo.graph import Contexts, Graph, GraphError, ParamStore, run_backward, run_forward
from innet.host.geo.ops import Array


@dataclass(frozen=True)
class StagePlan:
    """What one stage runs and exchanges."""

    index: int
    """Position in the pipeline, 0-based."""
    nodes: tuple[str, ...]
    """Names of its nodes, in topological order."""
    inputs: tuple[str, ...]
    """Values it receives from the previous stage (boundary ``index - 1``)."""
    outputs: tuple[str, ...]
    """Values it sends to the next stage (boundary ``index``); empty for the last stage."""


def boundaries(graph: Graph, cuts: Sequence[int]) -> list[tuple[str, ...]]:
    """For cuts (indices where a new stage starts), the values crossing each boundary."""
    consumers = graph.consumers()
    out = []
    for start in cuts:
        live = [n.name for n in graph.nodes[:start]
                if any(c >= start for c in consumers.get(n.name, []))]
        out.append(tuple(live))
    return out


def partition(graph: Graph, cuts: Sequence[int]) -> tuple[StagePlan, ...]:
    """Stages from cut indices, e.g. ``cuts=(3, 7)`` gives nodes [0:3], [3:7], [7:]."""
    cuts = tuple(int(c) for c in cuts)
    if list(cuts) != sorted(set(cuts)) or any(not 0 < c < len(graph) for c in cuts):
        raise GraphError(f"graph {graph.name}: cuts {list(cuts)} must be increasing and within 1..{len(graph) - 1}")
    bounds = boundaries(graph, cuts)
    edges = [0, *cuts, len(graph)]
    return tuple(StagePlan(i, tuple(n.name for n in graph.nodes[edges[i]:edges[i + 1]]),
                           bounds[i - 1] if i > 0 else (), bounds[i] if i < len(cuts) else ())
                 for i in range(len(edges) - 1))


def even_cuts(graph: Graph, stages: int) -> tuple[int, ...]:
    """Cuts giving ``stages`` slices of (nearly) equal node count: the naive placement."""
    if not 1 <= stages <= len(graph):
        raise GraphError(f"graph {graph.name}: {stages} stages for {len(graph)} nodes")
    return tuple(round(i * len(graph) / stages) for i in range(1, stages))


class Stage:
    """Executes one stage: forward per microbatch, backward per microbatch, parameter gradients."""

    def __init__(self, graph: Graph, plan: StagePlan, params: ParamStore) -> None:
        self.graph = graph
        self.plan = plan
        self.nodes = [graph.node(n) for n in plan.nodes]
        self.params = params
        self.is_last = graph.loss in plan.nodes
        self._loss_dtype: np.dtype = np.dtype(np.float32)
        self._ctxs: dict[int, tuple[Contexts, tuple[str, ...]]] = {}
        self.grads: ParamStore = {}
        self.last_values: dict[str, Array] = {}
        """Every value of the most recent forward (the last stage reads its logits from here)."""

    def forward(self, mb: int, received: Mapping[str, Array], feeds: Mapping[str, Array]) -> dict[str, Array]:
        """Run microbatch ``mb``: the values for the next stage (``{loss: ...}`` on the last)."""
        missing = set(self.plan.inputs) - set(received)
        if missing:
            raise GraphError(f"stage {self.plan.index}: microbatch {mb} lacks inputs {sorted(missing)}")
        values: dict[str, Array] = {**feeds, **received}
        ctxs = run_forward(self.nodes, values, self.params)
        self._ctxs[mb] = (ctxs, tuple(received))
        self.last_values = values
        if self.is_last:
            self._loss_dtype = values[self.graph.loss].dtype
            return {self.graph.loss: values[self.graph.loss]}
        return {v: values[v] for v in self.plan.outputs}

    def backward(self, mb: int, grads_out: Mapping[str, Array], loss_scale: float = 1.0) -> dict[str, Array]:
        """Backward of microbatch ``mb`` given the gradients of its outputs (the last stage takes
        none and starts from ``loss_scale``); the gradients of its inputs."""
        ctxs, received = self._ctxs.pop(mb)
        grads: dict[str, Array] = dict(grads_out)
        if self.is_last:
            grads = {self.graph.loss: np.asarray(loss_scale, dtype=self._loss_dtype)}
        run_backward(self.nodes, grads, ctxs, self.params, self.grads)
        return {v: grads[v] for v in self.plan.inputs}

    def discard(self, mb: int) -> None:
        """Drop the context of a forward-only microbatch (evaluation)."""
        self._ctxs.pop(mb, None)
        self.last_values = {}

    def take_grads(self) -> ParamStore:
        """The accumulated parameter gradients (reset for the next step)."""
        g, self.grads = self.grads, {}
        return g


@dataclass(frozen=True)
class Sgd:
    """SGD with momentum, per stage on its own parameters (no state crosses a site)."""

    lr: float = 0.1
    momentum: float = 0.0


class SgdState:
    def __init__(self, config: Sgd) -> None:
        self.config = config
        self.velocity: ParamStore = {}

    def step(self, params: ParamStore, grads: ParamStore) -> None:
        c = self.config
        for node, gp in grads.items():
            for k, g in gp.items():
                p = params[node][k]
                if c.momentum:
                    v = self.velocity.setdefault(node, {}).get(k)
                    v = g.astype(p.dtype) if v is None else c.momentum * v + g.astype(p.dtype)
                    self.velocity[node][k] = v
                    p -= (c.lr * v).astype(p.dtype)
                else:
                    p -= (c.lr * g).astype(p.dtype)
