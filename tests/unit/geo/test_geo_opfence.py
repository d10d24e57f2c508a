"""OpWorkload estimator and OP-Fence: clustering by bandwidth, placement, predicted step time."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from innet.host.geo.estimator import boundary_bytes, measure
from innet.host.geo.graph import gpt, mlp
from innet.host.geo.opfence import SiteNetwork, PlanError, cluster, naive, opfence, predict


def _net(sites: dict[str, list[str]], inter: dict[tuple[str, str], tuple[float, float]],
         intra: float = 10_000) -> SiteNetwork:
    where = {d: s for s, ds in sites.items() for d in ds}
    devs = tuple(where)
    bw, delay = {}, {}
    for a, b in itertools.combinations(devs, 2):
        sa, sb = where[a], where[b]
        if sa == sb:
            bw[(a, b)], delay[(a, b)] = intra * (1 + 0.5 * (len(a) % 2)), 0.05  # similar, not equal
        else:
            r, d = inter.get((sa, sb)) or inter[(sb, sa)]
            bw[(a, b)], delay[(a, b)] = r, d
    return SiteNetwork(devs, bw, delay)


WAN = {("A", "B"): (10.0, 40.0), ("B", "C"): (100.0, 10.0), ("A", "C"): (1000.0, 2.0)}


def test_opfence_clusters_devices_by_bandwidth() -> None:
    net = _net({"A": ["a1", "a2"], "B": ["b1", "b2", "b3"], "C": ["c1"]}, WAN)
    assert cluster(net) == [("a1", "a2"), ("b1", "b2", "b3"), ("c1",)]


def test_one_cluster_without_a_bandwidth_gap() -> None:
    net = _net({"A": ["a1", "a2"], "B": ["b1"]}, {("A", "B"): (5000.0, 1.0)})
    assert cluster(net) == [("a1", "a2", "b1")]


def _workload(graph, batch=32, op_s=1e-4):
    params = graph.init_params(0)
    feeds = {"x": np.zeros((batch, 64), np.float32), "y": np.zeros(batch, np.int64)}
    w = measure(graph, params, feeds, repeats=1)
    return replace(w, costs=tuple(replace(c, fwd_s=op_s, bwd_s=op_s) for c in w.costs))


def test_estimator_bytes_per_edge() -> None:
    g = mlp([64, 256, 8, 10])
    w = measure(g, g.init_params(0), {"x": np.zeros((32, 64), np.float32), "y": np.zeros(32, np.int64)}, repeats=2)
    assert [c.out_bytes for c in w.costs] == [32 * 256 * 4] * 2 + [32 * 8 * 4] * 2 + [32 * 10 * 4, 4]
    assert w.costs[0].param_bytes == (64 * 256 + 256) * 4 and all(c.fwd_s > 0 for c in w.costs)
    assert boundary_bytes(g, w, (2, 4)) == [32 * 256 * 4, 32 * 8 * 4]


def test_opfence_avoids_the_slowest_link_and_puts_the_narrow_tensor_on_the_slow_one() -> None:
    g = mlp([64, 256, 8, 256, 10])
    w = _workload(g)
    net = _net({"A": ["a1"], "B": ["b1"], "C": ["c1"]}, WAN)
    clusters = [("a1",), ("b1",), ("c1",)]  # one device per site: nothing to cluster
    best = opfence(g, w, net, clusters, microbatches=4)
    base = naive(g, w, net, clusters, microbatches=4)
    assert [link.bw_mbps for link in base.links] == [10.0, 100.0]  # A-B-C in the order given
    rates = [link.bw_mbps for link in best.links]
    assert 10.0 not in rates and sorted(rates) == [100.0, 1000.0]
    slow = rates.index(100.0)
    assert best.boundary_bytes[slow] <= 32 * 8 * 4
    assert best.step_s < base.step_s / 2
    assert best.cuts[-1] < len(g) - 1  # the loss stays with the layer producing its logits
    assert "predicted step" in best.describe("opfence")


def test_prediction_matches_a_hand_computed_pipeline() -> None:
    g = mlp([64, 16, 10])  # fc0 relu0 fc1 loss
    w = _workload(g, batch=8, op_s=1e-3)
    net = _net({"A": ["a1"], "B": ["b1"]}, {("A", "B"): (8.0, 5.0)})
    plan = predict(g, w, net, [("a1",), ("b1",)], (2,), microbatches=3)
    ser = 8 * 16 * 4 * 8 / 8e6
    fwd = bwd = 2e-3  # two operators per stage, 1 ms each way
    expect = 4 * fwd + 2 * (5e-3 + ser) + 2 * (max(fwd, ser) + max(bwd, ser))
    assert plan.step_s == pytest.approx(expect)


def test_plan_errors_are_named() -> None:
    g = mlp([64, 10])  # 2 operators
    w = _workload(g)
    net = _net({"A": ["a1"], "B": ["b1"], "C": ["c1"]}, WAN)
    with pytest.raises(PlanError, match="3 clusters but graph mlp has only 1 operators besides its loss"):
        opfence(g, w, net, [("a1",), ("b1",), ("c1",)])


def test_opfence_on_a_gpt_block_cuts_the_residual_stream_not_the_mlp_hidden_layer() -> None:
    g = gpt(vocab=16, d=16, heads=2, layers=1, seq=8)
    params = g.init_params(0)
    w = measure(g, params, {"tokens": np.zeros((4, 8), np.int64), "targets": np.zeros((4, 8), np.int64)}, 1)
    w = replace(w, costs=tuple(replace(c, fwd_s=1e-4, bwd_s=1e-4) for c in w.costs))
    net = _net({"A": ["a1"], "B": ["b1"]}, {("A", "B"): (10.0, 10.0)})
    best = opfence(g, w, net, [("a1",), ("b1",)])
    cut_value = g.nodes[best.cuts[0] - 1].name
    assert cut_value not in ("b0fc", "b0gelu")  # 4d wide: never the cheapest boundary
