"""Rail-only and rail-optimized topologies: the grid, HB fabrics, validation, JSON round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.testbed.core.topology import (
    TOPOLOGIES,
    Connection,
    HostSpec,
    Link,
    SwitchSpec,
    Topology,
    TopologyError,
    rail_only,
    rail_optimized,
)


def test_rail_only_grid_names_ranks_and_ports() -> None:
    topo = rail_only(domains=2, gpus_per_domain=4, nic_link=Link(bw_mbps=100), hb_link=Link(bw_mbps=1000))
    assert topo.kind == "rail-only" and topo.name == "rail-only-2x4"
    assert [s.name for s in topo.p4_switches] == ["r1", "r2", "r3", "r4"]
    assert {s.role for s in topo.switches} == {"rail", "hb"}
    assert [h.name for h in topo.workers] == ["d1g1", "d1g2", "d1g3", "d1g4", "d2g1", "d2g2", "d2g3", "d2g4"]
    assert topo.host("d2g3").rank == 6 and topo.host("d2g3").group == "hb2"
    assert topo.host("d2g3").hb_address == "10.1.2.3"
    nic = topo.uplink("d2g3")
    assert (nic.b, nic.b_port, nic.link) == ("r3", 2, Link(bw_mbps=100))
    hb = topo.hb_link("d2g3")
    assert hb is not None and (hb.b, hb.b_port, hb.link) == ("hb2", 3, Link(bw_mbps=1000))


def test_rail_optimized_adds_one_spine_on_every_rail_at_full_bisection() -> None:
    topo = rail_optimized(domains=3, gpus_per_domain=2, nic_link=Link(bw_mbps=10))
    assert [s.name for s in topo.p4_switches] == ["r1", "r2", "sp1"]
    uplinks = [c for c in topo.links if c.b == "sp1"]
    assert [(c.a, c.a_port, c.b_port) for c in uplinks] == [("r1", 4, 1), ("r2", 4, 2)]
    assert {c.link for c in uplinks} == {Link(bw_mbps=30)}
    slow = rail_optimized(domains=3, gpus_per_domain=2, spine_link=Link(bw_mbps=5))
    assert {c.link for c in slow.links if c.b == "sp1"} == {Link(bw_mbps=5)}


@pytest.mark.parametrize("make", [rail_only, rail_optimized])
def test_rail_topologies_round_trip_through_json(make: object, tmp_path: Path) -> None:
    topo = make(domains=2, gpus_per_domain=4, nic_link=Link(bw_mbps=50), hb_link=Link(bw_mbps=500, mtu=9000))  # type: ignore[operator]
    path = tmp_path / "t.json"
    topo.save(path)
    assert Topology.load(path) == topo
    assert "10.1.1.1/24" in str(topo)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"domains": 1}, r"rail-only: domains=1 must be an integer >= 2"),
    ({"gpus_per_domain": True}, r"rail-only: gpus_per_domain=True must be an integer >= 2"),
    ({"domains": 5, "gpus_per_domain": 8}, r"5 x 8 = 40 GPUs, at most 32"),
])
def test_rail_only_rejects_bad_grids(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        rail_only(**kwargs)  # type: ignore[arg-type]


def test_generators_are_registered_by_topo_name() -> None:
    assert TOPOLOGIES["rail-only"] is rail_only and TOPOLOGIES["rail-optimized"] is rail_optimized


def test_hb_ip_must_be_apart_from_the_nic_subnet() -> None:
    with pytest.raises(TopologyError, match=r"host a1: hb_ip '10.0.0.9/24' needs a prefix length and a subnet "
                                            r"apart from ip '10.0.0.1/24'"):
        HostSpec(name="a1", ip="10.0.0.1/24", mac="00:00:00:00:00:01", hb_ip="10.0.0.9/24")


def _hosts() -> tuple[HostSpec, ...]:
    return (HostSpec("a1", "10.0.0.1/24", "00:00:00:00:00:01", 0, hb_ip="10.1.1.1/24"),
            HostSpec("a2", "10.0.0.2/24", "00:00:00:00:00:02", 1, hb_ip="10.1.1.2/24"))


def test_a_host_with_hb_ip_needs_its_hb_link() -> None:
    sw = (SwitchSpec("s1"), SwitchSpec("f1", role="hb", ip="10.1.1.254", mac="02:00:00:00:03:01"))
    links = (Connection("a1", "s1", 1), Connection("a2", "s1", 2), Connection("a1", "f1", 1))
    with pytest.raises(TopologyError, match=r"host a2 has hb_ip '10.1.1.2/24' and 0 hb-fabric links"):
        Topology("t", "rail-only", _hosts(), sw, links)


def test_an_hb_fabric_alone_is_not_enough() -> None:
    sw = (SwitchSpec("f1", role="hb", ip="10.1.1.254", mac="02:00:00:00:03:01"),)
    hosts = tuple(HostSpec(h.name, h.ip, h.mac, h.rank) for h in _hosts())
    links = (Connection("a1", "f1", 1), Connection("a2", "f1", 2))
    with pytest.raises(TopologyError, match=r"host a1 must have exactly one link, has 0"):
        Topology("t", "x", hosts, sw, links)
