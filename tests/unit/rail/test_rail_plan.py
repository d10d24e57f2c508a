"""innet.testbed.rail.grid: the grid, routes of every switch, hierarchical and flat jobs, shard bounds."""

from __future__ import annotations

import pytest

from innet.controller.errors import JobError
from innet.testbed.core.forwarding import forwarding
from innet.testbed.rail.grid import (HostRoute, RailGrid, flat_job, hierarchical_jobs, host_routes, ring_order,
                                 shard_bounds)
from innet.testbed.core.topology import TopologyError, rail_only, rail_optimized, star


def test_grid_positions() -> None:
    grid = RailGrid.of(rail_only(3, 2))
    assert (grid.x, grid.y, grid.rails, grid.spine) == (2, 3, ("r1", "r2"), None)
    assert grid.hosts[2] == ("d3g1", "d3g2")
    assert grid.position("d2g2") == (1, 1)
    assert [h.name for h in grid.rail(1)] == ["d1g2", "d2g2", "d3g2"]


def test_grid_of_a_star_is_refused() -> None:
    with pytest.raises(TopologyError, match=r"topology star4: kind 'star' is not one of rail-only, rail-optimized"):
        RailGrid.of(star(4))


@pytest.mark.parametrize(("n", "k", "rails", "expected"), [
    (1000, 64, 4, [(0, 256), (256, 512), (512, 768), (768, 1000)]),
    (100, 64, 4, [(0, 64), (64, 100), (100, 100), (100, 100)]),
    (0, 64, 2, [(0, 0), (0, 0)]),
])
def test_shard_bounds_are_whole_chunks_like_the_plan(n: int, k: int, rails: int,
                                                     expected: list[tuple[int, int]]) -> None:
    assert shard_bounds(n, k, rails) == expected


def test_rail_only_routes_stay_on_the_rail() -> None:
    fwd = forwarding(rail_only(2, 2))
    r1 = fwd["r1"]
    assert (r1.switch_ip, r1.switch_mac) == ("10.0.0.254", "02:00:00:00:01:01")
    assert {(r.prefix, r.port) for r in r1.routes} == {("10.0.0.1/32", 1), ("10.0.0.3/32", 2)}
    assert dict(r1.arp) == {"10.0.0.1": "00:00:00:00:00:01", "10.0.0.3": "00:00:00:00:00:03"}


def test_rail_optimized_routes_other_rails_through_the_spine() -> None:
    fwd = forwarding(rail_optimized(2, 2))
    r1 = {r.prefix: (r.mac, r.port) for r in fwd["r1"].routes}
    assert r1["10.0.0.2/32"] == ("02:00:00:00:02:01", 3)  # d1g2 is on r2: via the spine's port 3
    assert r1["10.0.0.252/32"] == ("02:00:00:00:02:01", 3)  # the spine's own address
    spine = {r.prefix: (r.mac, r.port) for r in fwd["sp1"].routes}
    assert spine["10.0.0.2/32"] == ("02:00:00:00:01:02", 2)
    assert spine["10.0.0.1/32"] == ("02:00:00:00:01:01", 1)


def test_hierarchical_jobs_one_per_rail_with_lr_over_x() -> None:
    grid = RailGrid.of(rail_only(2, 4))
    jobs, plan = hierarchical_jobs(grid, 1, window=8, k=64, agent_port=5000, mode="sgd", param_chunks=10, lr=0.4)
    assert [(s.switch, s.first_chunk, s.chunks) for s in plan.shards] == [("r1", 0, 3), ("r2", 3, 3), ("r3", 6, 2),
                                                                          ("r4", 8, 2)]
    r3 = jobs["r3"]
    assert [(w.rank, w.ip, w.port) for w in r3.workers] == [(0, "10.0.0.3", 1), (1, "10.0.0.7", 2)]
    assert r3.lr == pytest.approx(0.1) and r3.num_workers == 2


def test_flat_job_on_the_spine_and_not_without_one() -> None:
    job = flat_job(RailGrid.of(rail_optimized(2, 2)), 2, window=8, k=64, agent_port=5000)
    assert [(w.rank, w.port) for w in job.workers] == [(0, 1), (1, 2), (2, 1), (3, 2)]
    with pytest.raises(TopologyError, match=r"flat INA needs a spine"):
        flat_job(RailGrid.of(rail_only(2, 2)), 2, window=8, k=64, agent_port=5000)


def test_sharded_job_must_cover_the_plans_switches() -> None:
    from innet.controller.controller import Controller
    from innet.controller.switch import SwitchEndpoint

    grid = RailGrid.of(rail_only(2, 2))
    jobs, plan = hierarchical_jobs(grid, 1, window=8, k=64, agent_port=5000)
    ctl = Controller([SwitchEndpoint("r1", "127.0.0.1:1"), SwitchEndpoint("r2", "127.0.0.1:2")])
    with pytest.raises(JobError, match=r"sharded job: one job id on exactly the plan's switches \['r1', 'r2'\], "
                                       r"got ids \[1\] on \['r1'\]"):
        ctl.create_sharded_job({"r1": jobs["r1"]}, plan)


def test_rail_only_host_routes_relay_other_ranks_through_the_hb_peer_on_their_rail() -> None:
    """PXN's two steps as host routes: d1g1 reaches d2g2 via d1g2 (HB), which sends it on rail r2."""
    routes = host_routes(RailGrid.of(rail_only(2, 2)))
    assert routes["d1g1"] == (HostRoute("10.0.0.2", "10.1.1.2"), HostRoute("10.0.0.4", "10.1.1.2"))
    assert routes["d2g2"] == (HostRoute("10.0.0.1", "10.1.2.1"), HostRoute("10.0.0.3", "10.1.2.1"))


def test_rail_only_host_routes_cover_every_pair_off_the_own_rail() -> None:
    grid = RailGrid.of(rail_only(3, 4))
    routes = host_routes(grid)
    for host, own in routes.items():
        d, g = grid.position(host)
        on_rail = {h.address for h in grid.rail(g)}
        assert {r.dst for r in own} == {h.address for h in grid.topology.workers} - on_rail
        for r in own:  # the relay is in the own domain, on the destination's rail
            relay = next(h for h in grid.domain(d) if h.hb_address == r.via)
            dest = next(h for h in grid.topology.workers if h.address == r.dst)
            assert grid.position(relay.name)[1] == grid.position(dest.name)[1]


def test_rail_optimized_needs_no_host_routes() -> None:
    assert set(host_routes(RailGrid.of(rail_optimized(2, 4))).values()) == {()}


@pytest.mark.parametrize(("domains", "gpus"), [(2, 2), (2, 4), (4, 2), (3, 2), (3, 3), (3, 4), (5, 3), (4, 8)])
def test_ring_order_neighbours_share_a_domain_or_a_rail(domains: int, gpus: int) -> None:
    """gloo's ring: every hop is on an HB link or on one rail, never relayed."""
    grid = RailGrid.of(rail_only(domains, gpus))
    ring = ring_order(grid)
    assert sorted(ring) == sorted(h.name for h in grid.topology.workers)
    assert ring[0] == grid.topology.workers[0].name  # gloo rank 0 hosts the rendezvous
    for a, b in zip(ring, ring[1:] + ring[:1]):
        (da, ga), (db, gb) = grid.position(a), grid.position(b)
        assert da == db or ga == gb, (a, b, ring)
