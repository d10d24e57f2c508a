"""Workload estimator: per-operator compute time (measured) and bytes per edge.

Times are measured by running each operator alone, forward then backward, on real inputs
of the planned microbatch size, ``repeats`` times, keeping the median (robust against the
other jobs on a shared machine). Bytes are those of each node's output, i.e. what crosses a
boundary placed after it (the planner sums the live values per boundary, residuals included).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from innet.host.geo.graph import Graph, ParamStore
from innet.host.geo.ops import Array


@dataclass(frozen=True)
class OpCost:
    """Measured cost of one node for one microbatch."""

    name: str
    fwd_s: float
    bwd_s: float
    out_bytes: int
    """Bytes of its output (dense)."""
    param_bytes: int
    """Bytes of its parameters (what a data-parallel site reduces per step)."""
    out_shape: tuple[int, ...] | None = None
    """Shape of its output; None when not known. The cost model needs it to charge a compressed
    link what the codec encodes (per-row top-k and int8 cost depend on the row width)."""

    @property
    def compute_s(self) -> float:
        return self.fwd_s + self.bwd_s


@dataclass(frozen=True)
class OpWorkload:
    """Costs of every node of a graph, in graph order."""

    graph: str
    costs: tuple[OpCost, ...]

    def stage_compute(self, start: int, end: int) -> float:
        return sum(c.compute_s for c in self.costs[start:end])

    def stage_fwd(self, start: int, end: int) -> float:
        return sum(c.fwd_s for c in self.costs[start:end])

    def stage_bwd(self, start: int, end: int) -> float:
        return sum(c.bwd_s for c in self.costs[start:end])

    def stage_param_bytes(self, start: int, end: int) -> int:
        return sum(c.param_bytes for c in self.costs[start:end])


def _time(fn: object, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(graph: Graph, params: ParamStore, feeds: Mapping[str, Array], repeats: int = 5) -> OpWorkload:
    """Run every operator on ``feeds`` (one microbatch) and time it, with one BLAS thread as the
    stage processes use (``innet.host.geo.launch``)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # timings then include BLAS threading
        return _measure(graph, params, feeds, repeats)
    with threadpool_limits(1):
        return _measure(graph, params, feeds, repeats)


def _measure(graph: Graph, params: ParamStore, feeds: Mapping[str, Array], repeats: int) -> OpWorkload:
    values: dict[str, Array] = dict(feeds)
    costs = []
    for node in graph.nodes:
        p = params.get(node.name, {})
        xs = [values[i] for i in node.inputs]
        out, ctx = node.op.forward(xs, p)
        g = np.ones_like(out)
        fwd = _time(lambda: node.op.forward(xs, p), repeats)
        bwd = _time(lambda: node.op.backward(ctx, g, p), repeats)
        values[node.name] = out
        costs.append(OpCost(node.name, fwd, bwd, int(np.asarray(out).nbytes),
                            sum(int(v.nbytes) for v in p.values()), tuple(int(d) for d in np.shape(out))))
    return OpWorkload(graph.name, tuple(costs))


def boundary_bytes(graph: Graph, workload: OpWorkload, cuts: Sequence[int]) -> list[int]:
    """Dense bytes crossing each boundary of ``cuts`` (one direction, one microbatch)."""
    from innet.host.geo.stages import boundaries

    size = {c.name: c.out_bytes for c in workload.costs}
    return [sum(size[v] for v in live) for live in boundaries(graph, cuts)]


def boundary_shapes(graph: Graph, workload: OpWorkload, cuts: Sequence[int]) -> list[dict[str, tuple[int, ...]]] | None:
    """Per boundary of ``cuts``, the shape of every value crossing it (one microbatch); None if
    the workload lacks a shape it needs."""
    from innet.host.geo.stages import boundaries

    shape = {c.name: c.out_shape for c in workload.costs}
    out = []
    for live in boundaries(graph, cuts):
        known = {v: s for v in live if (s := shape[v]) is not None}
        if len(known) < len(live):
            return None
        out.append(known)
    return out
