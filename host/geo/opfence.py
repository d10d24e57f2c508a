"""OP-Fence: cluster devices by bandwidth, then cut the OP-DAG across the clusters for throughput.

1. **Clustering.** Pairwise bandwidths span orders of magnitude between sites (Mbit/s) and
   inside them (Gbit/s). Sorted on a log scale, the largest gap between neighbouring values
   (when it is at least ``min_gap`` times; on a tie the highest such gap, giving the
   tightest groups) separates "inside" from "between"; devices joined
   by links above it form one cluster (union-find). A cluster is one pipeline stage whose
   devices run it data parallel (gradients summed by the site's switch).
2. **Partition and placement.** Every order of the clusters along the pipeline and every
   set of cut points of the topological order is scored with the cost model below; the
   lowest predicted step time wins. With a handful of sites and tens of operators this
   exhaustive search is milliseconds; it puts small tensors on slow links and keeps the
   slowest link out of the chain when a faster route through the sites exists.

Cost model (GPipe, M microbatches, per pipeline): the first microbatch pays every stage's
compute and every link's delay and serialisation both ways; the other M-1 are paced by
the bottleneck resource (slowest stage or busiest link direction) twice, in the forward
phase and again in the backward phase (GPipe flushes between them); data-parallel stages add
their gradient reduction at the intra-site bandwidth. Every site hosts one stage (the model
is spread over all of them, as in geo-distributed training).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from innet.host.geo.compress import CompressionConfig, LinkCompressor
from innet.host.geo.estimator import OpWorkload, boundary_bytes, boundary_shapes
from innet.host.geo.graph import Graph
from innet.host.geo.stages import even_cuts

MAX_ORDERS = 40320
"""Cluster orders searched exhaustively (8 clusters); more is refused."""


class PlanError(ValueError):
    """The devices or graph cannot be planned; names what and why."""


@dataclass(frozen=True)
class SiteNetwork:
    """Devices and the links between every pair (symmetric)."""

    devices: tuple[str, ...]
    bw_mbps: Mapping[tuple[str, str], float]
    """Bandwidth per unordered pair (either order may be given)."""
    delay_ms: Mapping[tuple[str, str], float]
    """One-way delay per pair."""
    speed: Mapping[str, float] | None = None
    """Relative compute speed per device (1.0 = the machine that measured the workload)."""

    def bw(self, a: str, b: str) -> float:
        v = self.bw_mbps.get((a, b), self.bw_mbps.get((b, a)))
        if v is None:
            raise PlanError(f"network: no bandwidth for devices {a!r} and {b!r}")
        return float(v)

    def delay(self, a: str, b: str) -> float:
        return float(self.delay_ms.get((a, b), self.delay_ms.get((b, a), 0.0)))

    def device_speed(self, d: str) -> float:
        return float((self.speed or {}).get(d, 1.0))


def cluster(net: SiteNetwork, min_gap: float = 4.0) -> list[tuple[str, ...]]:
    """Groups of devices with similar (high) mutual bandwidth, in device order."""
    devs = net.devices
    pairs = [(net.bw(a, b), a, b) for a, b in itertools.combinations(devs, 2)]
    values = sorted({bw for bw, _, _ in pairs})
    threshold = math.inf
    best = min_gap
    for lo, hi in zip(values, values[1:]):
        if hi / lo >= best:
            best, threshold = hi / lo, math.sqrt(lo * hi)
    parent = {d: d for d in devs}

    def find(d: str) -> str:
        while parent[d] != d:
            parent[d] = parent[parent[d]]
            d = parent[d]
        return d

    for bw, a, b in pairs:
        if bw >= threshold:
            parent[find(a)] = find(b)
    groups: dict[str, list[str]] = {}
    for d in devs:
        groups.setdefault(find(d), []).append(d)
    if threshold == math.inf:  # no gap: everything is one cluster
        return [tuple(devs)]
    return [tuple(g) for g in groups.values()]


@dataclass(frozen=True)
class LinkCost:
    bw_mbps: float
    delay_ms: float


@dataclass(frozen=True)
class Plan:
    """A partition of the graph over an order of clusters, with its predicted step time."""

    order: tuple[tuple[str, ...], ...]
    """Clusters in pipeline order (stage i runs on cluster ``order[i]``)."""
    cuts: tuple[int, ...]
    stage_nodes: tuple[tuple[str, ...], ...]
    stage_compute_s: tuple[float, ...]
    """Per microbatch, forward + backward, at the cluster's speed."""
    links: tuple[LinkCost, ...]
    """WAN link of each boundary."""
    boundary_bytes: tuple[int, ...]
    """Bytes per microbatch each way (after compression, if any)."""
    reduce_s: tuple[float, ...]
    microbatches: int
    step_s: float
    """Predicted step time."""

    def describe(self, label: str = "plan") -> str:
        lines = [f"{label}: predicted step {self.step_s * 1e3:.1f} ms ({self.microbatches} microbatches)"]
        for i, (devs, nodes) in enumerate(zip(self.order, self.stage_nodes)):
            lines.append(f"  stage {i} on [{', '.join(devs)}]: {len(nodes)} ops {nodes[0]}..{nodes[-1]}, "
                         f"compute {self.stage_compute_s[i] * 1e3:.2f} ms/microbatch"
                         + (f", reduce {self.reduce_s[i] * 1e3:.2f} ms" if self.reduce_s[i] else ""))
            if i < len(self.links):
                link = self.links[i]
                lines.append(f"    -> {self.boundary_bytes[i]} B/microbatch over {link.bw_mbps:g} Mbit/s, "
                             f"{link.delay_ms:g} ms ({self.boundary_bytes[i] * 8 / (link.bw_mbps * 1e6) * 1e3:.2f} ms "
                             "serialisation)")
        return "\n".join(lines)


def inter_link(net: SiteNetwork, a: Sequence[str], b: Sequence[str]) -> LinkCost:
    """The link between two clusters: the slowest device pair (replica pipelines use them all)."""
    bw = min(net.bw(x, y) for x in a for y in b)
    delay = max(net.delay(x, y) for x in a for y in b)
    return LinkCost(bw, delay)


def _intra_bw(net: SiteNetwork, c: Sequence[str]) -> float | None:
    if len(c) < 2:
        return None
    return min(net.bw(x, y) for x, y in itertools.combinations(c, 2))


def predict(graph: Graph, workload: OpWorkload, net: SiteNetwork, order: Sequence[Sequence[str]], cuts: Sequence[int],
            microbatches: int = 1, ratios: Sequence[float] | None = None, itemsize: int = 4,
            sent_bytes: Sequence[tuple[float, float]] | None = None,
            codec: tuple[LinkCompressor, LinkCompressor] | None = None,
            shapes: Sequence[Mapping[str, tuple[int, ...]]] | None = None, step: int | None = None) -> Plan:
    """Score one placement; ``ratios`` are per-boundary top-k ratios (1.0: dense), or
    ``sent_bytes`` gives per boundary the bytes per microbatch actually sent (forward, backward),
    e.g. as measured: int8 or top-k with int8 values and masked gradients are not ``ratio``
    times dense, and the two directions differ. Otherwise a link is charged the codec's own byte
    count (:meth:`LinkCompressor.predicted_bytes`), so the model charges what the run will
    encode, not a formula of its own: ``codec`` is the forward and backward compressor (default:
    global top-k at ``ratios``, value and index per element) and ``shapes`` per boundary the
    tensors crossing it per microbatch (default: the workload's measured output shapes)."""
    if len(order) != len(cuts) + 1:
        raise PlanError(f"plan: {len(order)} clusters for {len(cuts) + 1} stages")
    edges = [0, *cuts, len(graph)]
    ratios = list(ratios) if ratios is not None else [1.0] * len(cuts)
    if len(ratios) != len(cuts):
        raise PlanError(f"plan: ratios for {len(ratios)} boundaries, the plan has {len(cuts)}")
    if sent_bytes is None and codec is None and any(r < 1.0 for r in ratios):
        codec = (LinkCompressor(CompressionConfig("topk"), direction="fwd"),
                 LinkCompressor(CompressionConfig("topk"), direction="bwd"))
    if sent_bytes is None and codec is not None:
        shapes = list(shapes) if shapes is not None else boundary_shapes(graph, workload, cuts)
        if shapes is None or len(shapes) != len(cuts):
            raise PlanError(f"plan: codec bytes need tensor shapes for each of {len(cuts)} boundaries, "
                            f"got {None if shapes is None else len(shapes)}")
        sent_bytes = [(float(codec[0].predicted_bytes(sh, r, step, itemsize)),
                       float(codec[1].predicted_bytes(sh, r, step, itemsize))) for sh, r in zip(shapes, ratios)]
    sent = boundary_bytes(graph, workload, cuts)
    both = [(float(b), float(b)) for b in sent] if sent_bytes is None else [tuple(x) for x in sent_bytes]
    if len(both) != len(cuts):
        raise PlanError(f"plan: sent bytes for {len(both)} boundaries, the plan has {len(cuts)}")
    compute, fwd, bwd, reduce = [], [], [], []
    for i, c in enumerate(order):
        speed = min(net.device_speed(d) for d in c)
        fwd.append(workload.stage_fwd(edges[i], edges[i + 1]) / speed)
        bwd.append(workload.stage_bwd(edges[i], edges[i + 1]) / speed)
        compute.append(fwd[-1] + bwd[-1])
        intra = _intra_bw(net, c)
        pbytes = workload.stage_param_bytes(edges[i], edges[i + 1])
        # INA: each replica sends its gradient once up and receives the sum once down
        reduce.append(0.0 if intra is None else 2 * pbytes * 8 / (intra * 1e6))
    links = [inter_link(net, a, b) for a, b in zip(order, order[1:])]
    ser_f = [f * 8 / (link.bw_mbps * 1e6) for (f, _), link in zip(both, links)]
    ser_b = [b * 8 / (link.bw_mbps * 1e6) for (_, b), link in zip(both, links)]
    fill = sum(compute) + sum(2 * link.delay_ms / 1e3 + f + b for link, f, b in zip(links, ser_f, ser_b))
    # GPipe flushes between the phases: the other M-1 microbatches are paced by the
    # bottleneck twice, once going forward and once coming back
    paced = max([*fwd, *ser_f]) + max([*bwd, *ser_b])
    sent = [int(round(f)) for f, _ in both]
    step_s = fill + (microbatches - 1) * paced + max(reduce, default=0.0)
    return Plan(tuple(tuple(c) for c in order), tuple(cuts),
                tuple(tuple(n.name for n in graph.nodes[edges[i]:edges[i + 1]]) for i in range(len(order))),
                tuple(compute), tuple(links), tuple(sent), tuple(reduce), microbatches, step_s)


def naive(graph: Graph, workload: OpWorkload, net: SiteNetwork, clusters: Sequence[Sequence[str]],
          microbatches: int = 1) -> Plan:
    """The baseline: clusters in the order given, equal numbers of operators per stage."""
    return predict(graph, workload, net, clusters, even_cuts(graph, len(clusters)), microbatches)


def opfence(graph: Graph, workload: OpWorkload, net: SiteNetwork, clusters: Sequence[Sequence[str]],
            microbatches: int = 1) -> Plan:
    """The best order and cuts under the cost model (exhaustive). The loss node stays with the
    operator before it: a stage holding only the loss has no work, and its boundary would carry
    the logits, which top-k cannot sparsify without wrecking the loss (measured: chance accuracy
    on digits with 10% top-k there)."""
    s = len(clusters)
    if s > len(graph) - 1:
        raise PlanError(f"plan: {s} clusters but graph {graph.name} has only {len(graph) - 1} operators "
                        "besides its loss")
    if math.factorial(s) > MAX_ORDERS:
        raise PlanError(f"plan: {s} clusters are too many orders to search (at most 8 clusters)")
    best: Plan | None = None
    for order in itertools.permutations(clusters):
        for cuts in itertools.combinations(range(1, len(graph) - 1), s - 1):
            plan = predict(graph, workload, net, order, cuts, microbatches)
            if best is None or plan.step_s < best.step_s:
                best = plan
    assert best is not None
    return best


# -- baselines a user would try -------------------------------------------------------


def _cut_range(graph: Graph) -> range:
    """Cut points every placement may use: the loss node stays with the operator before it."""
    return range(1, len(graph) - 1)


def check_fit(graph: Graph, net: SiteNetwork, groups: Sequence[Sequence[str]]) -> None:
    """Refuses more stages than operators, or a zero-bandwidth pair of groups."""
    if len(groups) > len(graph) - 1:
        raise PlanError(f"plan: {len(groups)} stages (one per site) but graph {graph.name} has only "
                        f"{len(graph) - 1} operators besides its loss")
    for a, b in itertools.combinations(groups, 2):
        link = inter_link(net, a, b)
        if not link.bw_mbps > 0:
            raise PlanError(f"plan: sites [{', '.join(a)}] and [{', '.join(b)}] have zero bandwidth between them")


def balanced_cuts(graph: Graph, workload: OpWorkload, stages: int) -> tuple[int, ...]:
    """Cuts that minimise the largest stage's measured compute (what a user balancing a
    pipeline by hand would do; communication is ignored)."""
    best: tuple[float, tuple[int, ...]] | None = None
    for cuts in itertools.combinations(_cut_range(graph), stages - 1):
        edges = [0, *cuts, len(graph)]
        worst = max(workload.stage_compute(edges[i], edges[i + 1]) for i in range(stages))
        if best is None or worst < best[0]:
            best = (worst, tuple(cuts))
    if best is None:
        raise PlanError(f"plan: graph {graph.name} cannot be cut into {stages} stages")
    return best[1]


def greedy_order(net: SiteNetwork, groups: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """Bandwidth-greedy chain: start with the pair of groups joined by the fastest link, then
    repeatedly extend whichever end has the fastest link to a group not yet placed (ties: the
    group given first). No compute or message size enters the choice."""
    gs = [tuple(g) for g in groups]
    if len(gs) < 2:
        return gs
    pairs = [(-inter_link(net, a, b).bw_mbps, i, j) for (i, a), (j, b) in itertools.combinations(enumerate(gs), 2)]
    _, i, j = min(pairs)
    chain = [gs[i], gs[j]]
    left = [g for k, g in enumerate(gs) if k not in (i, j)]
    while left:
        best = None
        for g in left:
            for end in (0, -1):
                key = (-inter_link(net, chain[end], g).bw_mbps, gs.index(g), end != 0)
                if best is None or key < best[0]:
                    best = (key, g, end)
        assert best is not None
        _, g, end = best
        if end == 0:
            chain.insert(0, g)
        else:
            chain.append(g)
        left.remove(g)
    return chain


def greedy(graph: Graph, workload: OpWorkload, net: SiteNetwork, groups: Sequence[Sequence[str]],
           microbatches: int = 1) -> Plan:
    """Baseline (b): bandwidth-greedy site order, compute-balanced cuts."""
    check_fit(graph, net, groups)
    return predict(graph, workload, net, greedy_order(net, groups), balanced_cuts(graph, workload, len(groups)),
                   microbatches)


def exhaustive(graph: Graph, workload: OpWorkload, net: SiteNetwork, groups: Sequence[Sequence[str]],
               microbatches: int = 1) -> Plan:
    """Baseline (c): every order of the given groups (the sites as the user names them, no
    bandwidth clustering) and every cut, scored with :func:`predict`, the model OP-Fence uses.
    Exact under that model; where the clusters equal the sites it finds OP-Fence's plan."""
    check_fit(graph, net, groups)
    if math.factorial(len(groups)) > MAX_ORDERS:
        raise PlanError(f"plan: {len(groups)} sites are too many orders to search (at most 8)")
    best: Plan | None = None
    for order in itertools.permutations(groups):
        for cuts in itertools.combinations(_cut_range(graph), len(groups) - 1):
            plan = predict(graph, workload, net, order, cuts, microbatches)
            if best is None or plan.step_s < best.step_s:
                best = plan
    assert best is not None
    return best
