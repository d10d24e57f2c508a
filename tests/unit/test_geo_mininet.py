"""The Mininet form of a geo topology, as data: which link gets HTB, which gets netem, and
what the geo transport still has to emulate (no root needed: nothing is brought up)."""

from __future__ import annotations

import pytest

from innet.testbed import bringup
from innet.testbed.geo_bench import GeoBenchConfig, GeoBenchError, wan_description
from innet.testbed.geo_mininet import GeoMininetTestbed, geo_mininet_topo
from innet.testbed.geo_topology import Site, Wan, geo
from innet.testbed.topology import Link, star


def _links(netem: bool) -> dict[tuple[str, str], dict]:
    topo = geo_mininet_topo(geo(), netem=netem)
    return {(a, b): {k: v for k, v in info.items() if k in ("bw", "delay", "port1", "port2")}
            for a, b, info in topo.links(withInfo=True)}


def test_wan_links_get_htb_rate_and_netem_delay_only_when_the_kernel_has_netem() -> None:
    without = _links(netem=False)
    assert without[("s1", "s2")] == {"bw": 10.0, "port1": 101, "port2": 101}
    assert without[("s2", "s3")] == {"bw": 100.0, "port1": 102, "port2": 101}
    assert without[("s1", "s3")] == {"bw": 1000.0, "port1": 102, "port2": 102}
    assert _links(netem=True)[("s1", "s2")] == {"bw": 10.0, "delay": "40ms", "port1": 101, "port2": 101}


def test_site_lan_links_above_mininets_htb_range_stay_unshaped() -> None:
    lan = _links(netem=False)[("s1h1", "s1")]
    assert lan["port2"] == 1 and "bw" not in lan and "delay" not in lan
    slow = geo([Site("a", 2, Link(bw_mbps=100)), Site("b", 2)], [Wan("a", "b", Link(bw_mbps=10, delay_ms=5))])
    assert {k: v for k, v in dict(geo_mininet_topo(slow, netem=False).linkInfo("s1h1", "s1")).items()
            if k == "bw"} == {"bw": 100.0}


def test_loss_on_a_geo_link_is_refused_by_name() -> None:
    lossy = geo([Site("a"), Site("b")], [Wan("a", "b", Link(bw_mbps=10, delay_ms=5, loss_pct=1))])
    with pytest.raises(bringup.TestbedError, match="link s1-s2: geo testbeds emulate rate and delay only"):
        geo_mininet_topo(lossy, netem=False)


def test_the_transport_keeps_only_the_delay_the_kernel_cannot_apply() -> None:
    tb = GeoMininetTestbed(geo())
    tb.wan = "transport"
    shape = tb.transport_shape("a", "b")
    assert shape is not None and (shape.bw_mbps, shape.delay_ms) == (None, 40.0)
    tb.wan = "netem"
    assert tb.transport_shape("b", "c") is None
    assert tb.stage_host("c", 1) == "s3h2"
    with pytest.raises(bringup.TestbedError, match="site 'c' has 2 hosts; pipeline replica 2 needs 3"):
        tb.stage_host("c", 2)


def test_geo_mininet_testbed_wants_a_geo_topology() -> None:
    with pytest.raises(bringup.TestbedError, match="kind 'star' is not 'geo'"):
        GeoMininetTestbed(star(2))


def test_bench_config_names_a_bad_testbed_and_results_say_which_emulation_applied() -> None:
    with pytest.raises(GeoBenchError, match="testbed 'docker': expected 'loopback' or 'mininet'"):
        GeoBenchConfig(testbed="docker")
    assert wan_description("loopback").startswith("transport: rate + delay")
    assert wan_description("mininet").split(":")[0] in ("kernel", "mixed")
