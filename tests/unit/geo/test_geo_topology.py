"""The geo topology as a value: sites, WAN links, site stars, the planner's view of it."""

from __future__ import annotations

import pytest

from innet.host.geo.opfence import cluster
from innet.testbed.geo.topology import Site, Wan, geo, network_view, site_star, sites_of, wan_shape
from innet.testbed.core.topology import Link, Topology, TopologyError


def test_default_geo_has_three_sites_and_the_three_wan_classes() -> None:
    t = geo()
    assert t.kind == "geo" and sites_of(t) == ["a", "b", "c"]
    assert [s.role for s in t.switches] == ["site"] * 3
    assert [h.rank for h in t.workers] == list(range(6))
    wan = {(c.a, c.b): (c.link.bw_mbps, c.link.delay_ms) for c in t.links if c.a_port is not None}
    assert wan == {("s1", "s2"): (10, 40), ("s2", "s3"): (100, 10), ("s1", "s3"): (1000, 2)}
    assert Topology.from_json(t.to_json()) == t


def test_wan_shape_uses_the_direct_link_else_the_lowest_delay_path() -> None:
    t = geo()
    assert (wan_shape(t, "a", "b").bw_mbps, wan_shape(t, "a", "b").delay_ms) == (10, 40)
    chain = geo(wan=[Wan("a", "b", Link(bw_mbps=10, delay_ms=40)), Wan("b", "c", Link(bw_mbps=100, delay_ms=5))])
    shape = wan_shape(chain, "a", "c")
    assert (shape.bw_mbps, shape.delay_ms) == (10, 45)


def test_site_star_is_a_single_switch_star() -> None:
    star = site_star(geo(), "b")
    assert star.kind == "star" and [h.name for h in star.workers] == ["s2h1", "s2h2"]
    assert [h.rank for h in star.workers] == [0, 1] and star.switch().name == "s2"


def test_opfence_clusters_the_default_geo_topology_by_site() -> None:
    t = geo([Site("a", 2), Site("b", 3), Site("c", 1)])
    assert cluster(network_view(t)) == [("s1h1", "s1h2"), ("s2h1", "s2h2", "s2h3"), ("s3h1",)]


def test_geo_errors_name_the_problem() -> None:
    with pytest.raises(TopologyError, match="WAN link a-x names unknown site 'x'"):
        geo(wan=[Wan("a", "x", Link(bw_mbps=10))])
    with pytest.raises(TopologyError, match="the WAN links do not connect every site"):
        geo(wan=[Wan("a", "b", Link(bw_mbps=10))])
    with pytest.raises(TopologyError, match="site 'a' workers=0 must be an integer within 1..9"):
        geo([Site("a", 0), Site("b")], wan=[Wan("a", "b", Link(bw_mbps=10))])
    with pytest.raises(TopologyError, match="site 'c' has 1 worker; a site star"):
        site_star(geo([Site("a"), Site("b"), Site("c", 1)]), "c")
