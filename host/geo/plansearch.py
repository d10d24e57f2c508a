"""Planning at 6+ sites: OP-Fence (cluster first) beside per-site search and greedy.

Exhaustive search over every site order and every set of cuts grows as ``n! * C(L, n-1)``;
at 6 sites and a GPT of a few dozen operators that is hours of :func:`predict` calls. This
module keeps planning to seconds without changing the cost model:

* **Orders.** A chain that crosses a slow link twice is never better than one that crosses
  it once, so only nearest-neighbour chains are scored: from every site, repeatedly append
  the site with the fastest link to the chain's end, plus each chain reversed (``2n`` orders).
* **Cuts.** For each order, coordinate descent from compute-balanced cuts: move one cut (or,
  when stuck, two adjacent cuts) to a better position, until no move lowers the predicted step.
  Scores are memoised per (order, cuts).
* **Balanced cuts** come from an exact min-max dynamic programme over prefix sums.

OP-Fence clusters first (:func:`~innet.host.geo.opfence.cluster`), so with two bandwidth
tiers it plans only a handful of clusters, each a data-parallel stage; :func:`compare`
returns its plan beside the unclustered search and greedy, with planning times.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from innet.host.geo.estimator import OpWorkload
from innet.host.geo.graph import Graph
from innet.host.geo.opfence import (Plan, PlanError, SiteNetwork, check_fit, cluster, greedy_order,
                                    inter_link, opfence, predict)

EXHAUSTIVE_LIMIT = 20_000
"""Placements OP-Fence scores exhaustively over its clusters; above it, :func:`search`."""


def two_tier(sites: int, groups: int = 2, fast_mbps: float = 1000.0, slow_mbps: float = 10.0,
             fast_ms: float = 1.0, slow_ms: float = 40.0, slow_step: float = 1.5) -> SiteNetwork:
    """``sites`` sites in ``groups`` equal groups: fast links inside a group, slow between.
    Groups ``k`` apart are joined at ``slow_mbps / slow_step ** (k - 1)`` with ``k`` times
    ``slow_ms`` delay, so with three or more groups farther groups are slower."""
    if groups < 1 or sites < groups or sites % groups:
        raise PlanError(f"two_tier: {sites} sites cannot form {groups} equal groups")
    if not 0 < slow_mbps < fast_mbps:
        raise PlanError(f"two_tier: slow tier {slow_mbps} Mbit/s must be positive and below the fast "
                        f"tier {fast_mbps} Mbit/s")
    per = sites // groups
    devs = tuple(f"s{i}" for i in range(sites))
    bw, delay = {}, {}
    for (i, a), (j, b) in itertools.combinations(enumerate(devs), 2):
        gi, gj = i // per, j // per
        if gi == gj:
            bw[(a, b)], delay[(a, b)] = fast_mbps * (1 + 0.1 * ((i + j) % 3)), fast_ms
        else:
            bw[(a, b)], delay[(a, b)] = slow_mbps / slow_step ** (abs(gi - gj) - 1), slow_ms * abs(gi - gj)
    return SiteNetwork(devs, bw, delay)


def balanced_cuts(workload: OpWorkload, cut_points: range, stages: int) -> tuple[int, ...]:
    """Cuts minimising the largest stage's compute, exact (dynamic programme, O(S * L^2)).
    Ties keep the earliest cut positions."""
    n = cut_points.stop + 1  # nodes; the last cut point leaves the loss with its operator
    if not 1 <= stages <= len(cut_points) + 1:
        raise PlanError(f"plan: {stages} stages but only {len(cut_points)} cut points")
    pre = [0.0]
    for c in workload.costs[:n]:
        pre.append(pre[-1] + c.compute_s)
    inf = float("inf")
    # best[s][e]: min of the largest stage over s stages covering nodes [0, e)
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    arg = [[0] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0.0
    valid_end = set(cut_points) | {n}
    for s in range(1, stages + 1):
        for e in range(1, n + 1):
            if e not in valid_end:
                continue
            for b in range(s - 1, e):
                if best[s - 1][b] == inf or (b != 0 and b not in valid_end):
                    continue
                v = max(best[s - 1][b], pre[e] - pre[b])
                if v < best[s][e] - 1e-15:
                    best[s][e], arg[s][e] = v, b
    if best[stages][n] == inf:
        raise PlanError(f"plan: cannot cut {n} nodes into {stages} stages")
    cuts, e = [], n
    for s in range(stages, 1, -1):
        e = arg[s][e]
        cuts.append(e)
    return tuple(reversed(cuts))


def chain_orders(net: SiteNetwork, groups: Sequence[Sequence[str]]) -> list[tuple[tuple[str, ...], ...]]:
    """Nearest-neighbour chains from every group, and their reverses, without repeats."""
    gs = [tuple(g) for g in groups]
    out: list[tuple[tuple[str, ...], ...]] = []
    for start in range(len(gs)):
        chain, left = [gs[start]], [g for k, g in enumerate(gs) if k != start]
        while left:
            nxt = max(left, key=lambda g: (inter_link(net, chain[-1], g).bw_mbps, -gs.index(g)))
            chain.append(nxt)
            left.remove(nxt)
        for c in (tuple(chain), tuple(reversed(chain))):
            if c not in out:
                out.append(c)
    greedy = tuple(greedy_order(net, gs))
    if greedy not in out:
        out.append(greedy)
    return out


@dataclass
class _Scorer:
    graph: Graph
    workload: OpWorkload
    net: SiteNetwork
    microbatches: int
    calls: int = 0

    def __post_init__(self) -> None:
        self._memo: dict[tuple[object, ...], Plan] = {}

    def __call__(self, order: tuple[tuple[str, ...], ...], cuts: tuple[int, ...]) -> Plan:
        key = (order, cuts)
        plan = self._memo.get(key)
        if plan is None:
            self.calls += 1
            plan = predict(self.graph, self.workload, self.net, order, cuts, self.microbatches)
            self._memo[key] = plan
        return plan


def descend_cuts(score: _Scorer, order: tuple[tuple[str, ...], ...], start: tuple[int, ...],
                 cut_points: range) -> Plan:
    """Coordinate descent over cuts from ``start``: move one cut between its neighbours, and
    when no single move helps, two adjacent cuts together (a narrow tensor onto a slow link
    often needs its neighbour to move first). Stops at a local optimum of the cost model."""
    cuts = tuple(start)
    best = score(order, cuts)

    def bounds(i: int, c: tuple[int, ...]) -> tuple[int, int]:
        lo = c[i - 1] + 1 if i else cut_points.start
        hi = c[i + 1] - 1 if i + 1 < len(c) else cut_points.stop - 1
        return lo, hi

    while True:
        before = best
        for i in range(len(cuts)):
            lo, hi = bounds(i, cuts)
            for pos in range(lo, hi + 1):
                plan = score(order, (*cuts[:i], pos, *cuts[i + 1:]))
                if plan.step_s < best.step_s - 1e-12:
                    best, cuts = plan, plan.cuts
        if best is before:
            for i in range(len(cuts) - 1):
                lo = bounds(i, cuts)[0]
                hi = bounds(i + 1, cuts)[1]
                for a in range(lo, hi + 1):
                    for b in range(a + 1, hi + 1):
                        plan = score(order, (*cuts[:i], a, b, *cuts[i + 2:]))
                        if plan.step_s < best.step_s - 1e-12:
                            best, cuts = plan, plan.cuts
        if best is before:
            return best


def search(graph: Graph, workload: OpWorkload, net: SiteNetwork, groups: Sequence[Sequence[str]],
           microbatches: int = 1) -> Plan:
    """Best plan found over :func:`chain_orders` with :func:`descend_cuts` from balanced cuts.
    Not exhaustive: seconds at 12 sites where exhaustive search runs for hours."""
    check_fit(graph, net, groups)
    points = range(1, len(graph) - 1)
    score = _Scorer(graph, workload, net, microbatches)
    start = balanced_cuts(workload, points, len(groups))
    best: Plan | None = None
    for order in chain_orders(net, groups):
        plan = descend_cuts(score, order, start, points)
        if best is None or plan.step_s < best.step_s:
            best = plan
    assert best is not None
    return best


@dataclass(frozen=True)
class TimedPlan:
    """A plan and the seconds its planner took."""
    plan: Plan
    planning_s: float


@dataclass(frozen=True)
class PlannerComparison:
    """OP-Fence (clusters first) against unclustered search and greedy on the same network."""

    clusters: tuple[tuple[str, ...], ...]
    opfence: TimedPlan
    search: TimedPlan
    greedy: TimedPlan

    def rows(self) -> list[tuple[str, int, float, float]]:
        """(planner, stages, predicted step s, planning s) per planner."""
        return [(name, len(t.plan.order), t.plan.step_s, t.planning_s)
                for name, t in (("opfence", self.opfence), ("search", self.search), ("greedy", self.greedy))]


def compare(graph: Graph, workload: OpWorkload, net: SiteNetwork, microbatches: int = 1,
            clock: Callable[[], float] = time.perf_counter) -> PlannerComparison:
    """Plan three ways: OP-Fence (cluster, then search over the clusters), search over the
    sites one per stage, and greedy (bandwidth chain, compute-balanced cuts)."""
    sites = [(d,) for d in net.devices]
    points = range(1, len(graph) - 1)

    def timed(fn: Callable[[], Plan]) -> TimedPlan:
        t0 = clock()
        plan = fn()
        return TimedPlan(plan, clock() - t0)

    clusters = tuple(cluster(net))

    def _opfence() -> Plan:
        # few clusters: OP-Fence's exhaustive search is cheap and exact; many: the same search
        if math.factorial(len(clusters)) * math.comb(len(points), len(clusters) - 1) <= EXHAUSTIVE_LIMIT:
            return opfence(graph, workload, net, clusters, microbatches)
        return search(graph, workload, net, clusters, microbatches)

    of = timed(_opfence)
    se = timed(lambda: search(graph, workload, net, sites, microbatches))

    def _greedy() -> Plan:
        check_fit(graph, net, sites)
        return predict(graph, workload, net, greedy_order(net, sites),
                       balanced_cuts(workload, points, len(sites)), microbatches)

    gr = timed(_greedy)
    return PlannerComparison(clusters, of, se, gr)
