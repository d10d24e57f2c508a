"""Placement baselines OP-Fence is compared against: bandwidth-greedy order with balanced cuts, and the
exhaustive search under OP-Fence's cost model without clustering."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from innet.host.geo.estimator import measure
from innet.host.geo.graph import mlp
from innet.host.geo.opfence import (PlanError, SiteNetwork, balanced_cuts, exhaustive, greedy, greedy_order, naive,
                                    opfence, predict)

SITES = {"A": ("a1", "a2"), "B": ("b1", "b2"), "C": ("c1", "c2")}
WAN = {("A", "B"): (10.0, 40.0), ("B", "C"): (100.0, 10.0), ("A", "C"): (1000.0, 2.0)}


def _net(sites: dict[str, tuple[str, ...]], wan: dict[tuple[str, str], tuple[float, float]]) -> SiteNetwork:
    where = {d: s for s, ds in sites.items() for d in ds}
    bw, delay = {}, {}
    for a, b in itertools.combinations(where, 2):
        sa, sb = where[a], where[b]
        r, d = (10_000.0, 0.05) if sa == sb else (wan.get((sa, sb)) or wan[(sb, sa)])
        bw[(a, b)], delay[(a, b)] = r, d
    return SiteNetwork(tuple(where), bw, delay)


def _workload(graph, costs: list[float] | None = None):
    w = measure(graph, graph.init_params(0), {"x": np.zeros((32, 64), np.float32), "y": np.zeros(32, np.int64)},
                repeats=1)
    costs = costs or [1e-4] * len(w.costs)
    return replace(w, costs=tuple(replace(c, fwd_s=s, bwd_s=s) for c, s in zip(w.costs, costs)))


def test_greedy_order_follows_the_fastest_links() -> None:
    net = _net(SITES, WAN)
    # fastest link A-C starts the chain; B joins the end with the faster link to it (C, 100 > 10)
    assert greedy_order(net, list(SITES.values())) == [SITES["A"], SITES["C"], SITES["B"]]
    flipped = _net(SITES, {("A", "B"): (100.0, 1.0), ("B", "C"): (10.0, 1.0), ("A", "C"): (1000.0, 1.0)})
    assert greedy_order(flipped, list(SITES.values())) == [SITES["B"], SITES["A"], SITES["C"]]


def test_balanced_cuts_minimise_the_largest_stage_compute() -> None:
    g = mlp([64, 128, 64, 32, 10])  # 7 operators + loss
    costs = [5e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-5]
    w = _workload(g, costs)
    cuts = balanced_cuts(g, w, 3)
    edges = [0, *cuts, len(g)]
    worst = max(w.stage_compute(edges[i], edges[i + 1]) for i in range(3))
    for other in itertools.combinations(range(1, len(g) - 1), 2):
        e = [0, *other, len(g)]
        assert worst <= max(w.stage_compute(e[i], e[i + 1]) for i in range(3)) + 1e-15
    assert cuts[0] == 1  # the heavy first operator gets a stage to itself


def test_greedy_uses_greedy_order_and_balanced_cuts() -> None:
    g = mlp([64, 128, 64, 32, 10])
    w, net = _workload(g), _net(SITES, WAN)
    plan = greedy(g, w, net, list(SITES.values()), microbatches=4)
    assert plan.order == (SITES["A"], SITES["C"], SITES["B"])
    assert plan.cuts == balanced_cuts(g, w, 3)


def test_exhaustive_is_exact_on_a_small_instance() -> None:
    g = mlp([64, 512, 4, 256, 10])  # a narrow tensor after the second linear layer
    w, net = _workload(g), _net(SITES, WAN)
    groups = list(SITES.values())
    plan = exhaustive(g, w, net, groups, microbatches=4)
    every = [predict(g, w, net, order, cuts, 4).step_s for order in itertools.permutations(groups)
             for cuts in itertools.combinations(range(1, len(g) - 1), 2)]
    assert plan.step_s == min(every)
    assert plan.step_s <= greedy(g, w, net, groups, 4).step_s
    assert plan.step_s <= naive(g, w, net, groups, 4).step_s
    # here clusters and sites coincide, so OP-Fence finds the same optimum
    assert opfence(g, w, net, groups, 4).step_s == pytest.approx(plan.step_s)


def test_a_plan_that_cannot_fit_names_why() -> None:
    g = mlp([64, 10])  # 1 operator + loss: at most 1 stage
    w, net = _workload(g), _net(SITES, WAN)
    with pytest.raises(PlanError, match="3 stages .* only 1 operators"):
        exhaustive(g, w, net, list(SITES.values()))
    zero = _net(SITES, {**WAN, ("A", "B"): (0.0, 40.0)})
    g2 = mlp([64, 128, 64, 10])
    with pytest.raises(PlanError, match=r"zero bandwidth"):
        greedy(g2, _workload(g2), zero, list(SITES.values()))
