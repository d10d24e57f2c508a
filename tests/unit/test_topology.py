"""innet.testbed.core.topology: star generator, validation messages, text and JSON round trip."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from innet.testbed.core.topology import (
    Connection,
    HostSpec,
    Link,
    SwitchSpec,
    Topology,
    TopologyError,
    star,
)


def test_star_has_hosts_ranks_ports_and_addresses() -> None:
    topo = star(workers=4, link=Link(bw_mbps=100, delay_ms=1))
    assert [h.name for h in topo.workers] == ["h1", "h2", "h3", "h4"]
    assert [h.rank for h in topo.workers] == [0, 1, 2, 3]
    assert [h.ip for h in topo.hosts] == [f"10.0.0.{i}/24" for i in range(1, 5)]
    assert topo.host("h3").mac == "00:00:00:00:00:03"
    assert topo.host("h3").address == "10.0.0.3"
    assert [c.b_port for c in topo.links] == [1, 2, 3, 4]
    assert topo.switch().ip == "10.0.0.254"
    assert topo.uplink("h2").link == Link(bw_mbps=100, delay_ms=1)


def test_star_is_frozen_and_hashable() -> None:
    topo = star(workers=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        topo.name = "x"  # type: ignore[misc]
    assert hash(topo) == hash(star(workers=2))


@pytest.mark.parametrize("workers", [0, 1, 33, -2, 2.5, True, "4"])
def test_star_rejects_bad_worker_counts(workers: object) -> None:
    with pytest.raises(TopologyError, match=r"star: workers=.* must be an integer within 2\.\.32"):
        star(workers=workers)  # type: ignore[arg-type]


def test_star_rejects_too_small_subnet() -> None:
    with pytest.raises(TopologyError, match=r"subnet 10.0.0.0/29 has room for 5 hosts, needs 8"):
        star(workers=8, subnet="10.0.0.0/29")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"bw_mbps": 0}, r"link bw_mbps=0: must be > 0"),
    ({"bw_mbps": -5.0}, r"link bw_mbps=-5.0: must be > 0"),
    ({"delay_ms": -1}, r"link delay_ms=-1: must be within 0\.\.10000 ms"),
    ({"loss_pct": 100}, r"link loss_pct=100: must be a percentage within 0\.\.100"),
    ({"loss_pct": -0.5}, r"link loss_pct=-0.5"),
    ({"jitter_ms": 1}, r"link jitter_ms=1: needs delay_ms"),
    ({"delay_ms": 1, "jitter_ms": 2}, r"link jitter_ms=2: must be within 0\.\.delay_ms \(1\)"),
    ({"mtu": 100}, r"link mtu=100: must be an integer within 576\.\.9000"),
    ({"mtu": 1500.0}, r"link mtu=1500.0"),
    ({"bw_mbps": "fast"}, r"link bw_mbps='fast': must be a number"),
])
def test_link_rejects_bad_params(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        Link(**kwargs)  # type: ignore[arg-type]


def test_link_tc_params_in_mininet_units() -> None:
    link = Link(bw_mbps=1000, delay_ms=0.5, jitter_ms=0.1, loss_pct=5, mtu=9000)
    assert link.tc_params() == {"bw": 1000.0, "delay": "0.5ms", "jitter": "0.1ms", "loss": 5.0}
    assert link.shaped and not Link(mtu=9000).shaped
    assert link.describe() == "1000 Mbit/s, 0.5 ms ±0.1, 5% loss, mtu 9000"
    assert Link().describe() == "unlimited"


def test_host_and_switch_validation_messages() -> None:
    with pytest.raises(TopologyError, match=r"host name 'H1'"):
        HostSpec(name="H1", ip="10.0.0.1/24", mac="00:00:00:00:00:01")
    with pytest.raises(TopologyError, match=r"host h1: ip '10.0.0.1' needs a prefix length"):
        HostSpec(name="h1", ip="10.0.0.1", mac="00:00:00:00:00:01")
    with pytest.raises(TopologyError, match=r"host h1: ip '10.0.0.0/24' is a network or broadcast"):
        HostSpec(name="h1", ip="10.0.0.0/24", mac="00:00:00:00:00:01")
    with pytest.raises(TopologyError, match=r"host h1: mac '00:00:00:00:00:0G'"):
        HostSpec(name="h1", ip="10.0.0.1/24", mac="00:00:00:00:00:0G")
    with pytest.raises(TopologyError, match=r"host h1: rank 32 is outside 0\.\.31"):
        HostSpec(name="h1", ip="10.0.0.1/24", mac="00:00:00:00:00:01", rank=32)
    with pytest.raises(TopologyError, match=r"switch s1: role 'core' is not one of aggregation, rail"):
        SwitchSpec(name="s1", role="core")
    with pytest.raises(TopologyError, match=r"link h1-s1: b_port 511 is outside 1\.\.510"):
        Connection(a="h1", b="s1", b_port=511)


def _hosts(n: int) -> tuple[HostSpec, ...]:
    return tuple(HostSpec(f"h{i}", f"10.0.0.{i}/24", f"00:00:00:00:00:{i:02x}", rank=i - 1) for i in range(1, n + 1))


def test_topology_rejects_inconsistent_graphs() -> None:
    s1 = SwitchSpec("s1")
    hosts = _hosts(2)
    ok_links = (Connection("h1", "s1", 1), Connection("h2", "s1", 2))
    Topology("t", "star", hosts, (s1,), ok_links)
    with pytest.raises(TopologyError, match=r"port 1 of s1 is used twice"):
        Topology("t", "star", hosts, (s1,), (Connection("h1", "s1", 1), Connection("h2", "s1", 1)))
    with pytest.raises(TopologyError, match=r"link h3-s1 names unknown node 'h3'"):
        Topology("t", "star", hosts, (s1,), ok_links + (Connection("h3", "s1", 3),))
    with pytest.raises(TopologyError, match=r"host h2 must have exactly one link, has 0"):
        Topology("t", "star", hosts, (s1,), ok_links[:1])
    with pytest.raises(TopologyError, match=r"worker ranks \[0, 2\] must be 0\.\.N-1"):
        bad = (hosts[0], dataclasses.replace(hosts[1], rank=2))
        Topology("t", "star", bad, (s1,), ok_links)
    with pytest.raises(TopologyError, match=r"needs at least 2 workers, has 1"):
        Topology("t", "star", (hosts[0], dataclasses.replace(hosts[1], rank=None)), (s1,), ok_links)
    with pytest.raises(TopologyError, match=r"ip 10.0.0.1 is used by both h1 and h2"):
        Topology("t", "star", (hosts[0], dataclasses.replace(hosts[1], ip="10.0.0.1/24")), (s1,), ok_links)
    with pytest.raises(TopologyError, match=r"node name 's1' is used twice"):
        Topology("t", "star", hosts, (s1, SwitchSpec("s1", ip="10.0.0.253")), ok_links)
    with pytest.raises(TopologyError, match=r"switch-to-switch link s2-s1 needs a_port"):
        Topology("t", "star", hosts, (s1, SwitchSpec("s2", ip="10.0.0.253", mac="02:00:00:00:02:fe")),
                 ok_links + (Connection("s2", "s1", 3),))


def test_multi_switch_topologies_are_representable() -> None:
    """Rail/geo topologies need several switches, switch-to-switch links and host groups."""
    hosts = tuple(dataclasses.replace(h, group=f"site{(h.rank or 0) // 2}") for h in _hosts(4))
    sw = (SwitchSpec("s1", role="site", ip="10.0.0.254"),
          SwitchSpec("s2", device_id=2, role="site", ip="10.0.0.253", mac="02:00:00:00:02:fe"))
    links = (Connection("h1", "s1", 1), Connection("h2", "s1", 2), Connection("h3", "s2", 1),
             Connection("h4", "s2", 2), Connection("s1", "s2", 3, Link(bw_mbps=10, delay_ms=20), a_port=3))
    topo = Topology("geo2", "geo", hosts, sw, links)
    assert Topology.from_json(topo.to_json()) == topo
    with pytest.raises(TopologyError, match=r"has 2 switches; name one"):
        topo.switch()
    assert topo.switch("s2").device_id == 2


def test_str_names_every_node_and_link() -> None:
    text = str(star(workers=3, link=Link(bw_mbps=1000, loss_pct=1)))
    assert text.splitlines()[0] == "topology star3 (star): 3 workers, 1 switch"
    assert "h2 10.0.0.2/24 00:00:00:00:00:02 rank 1 <-> s1 port 2: 1000 Mbit/s, 1% loss" in text


def test_json_round_trip_and_file(tmp_path: Path) -> None:
    topo = star(workers=8, link=Link(bw_mbps=1000, delay_ms=0.1, loss_pct=1.0, mtu=9000))
    path = tmp_path / "star8.json"
    topo.save(path)
    assert Topology.load(path) == topo
    assert json.loads(path.read_text())["format"] == "innet-topology/1"


def test_with_link_replaces_every_link() -> None:
    topo = star(workers=3).with_link(Link(loss_pct=5))
    assert {c.link for c in topo.links} == {Link(loss_pct=5)}


def test_load_errors_name_the_problem(tmp_path: Path) -> None:
    data = star(workers=2).to_dict()
    with pytest.raises(TopologyError, match=r"format 'x' is not 'innet-topology/1'"):
        Topology.from_dict({**data, "format": "x"})
    bad = json.loads(json.dumps(data))
    bad["links"][0]["link"]["bandwidth"] = 10
    with pytest.raises(TopologyError, match=r"links\[0\].link has unknown keys \['bandwidth'\]"):
        Topology.from_dict(bad)
    bad = json.loads(json.dumps(data))
    bad["links"][1]["link"]["loss_pct"] = 150
    with pytest.raises(TopologyError, match=r"link loss_pct=150"):
        Topology.from_dict(bad)
    with pytest.raises(TopologyError, match=r"missing key 'hosts'"):
        Topology.from_dict({k: v for k, v in data.items() if k != "hosts"})
    with pytest.raises(TopologyError, match=r"topology JSON:"):
        Topology.from_json("{")
    with pytest.raises(TopologyError, match=r"topology file .*nope.json"):
        Topology.load(tmp_path / "nope.json")


def test_load_refuses_binary_and_wrong_shapes(tmp_path: Path) -> None:
    binary = tmp_path / "topo.json"
    binary.write_bytes(b'{"name": "\xd0\x00"}')
    with pytest.raises(TopologyError, match=r"topology file '.*topo.json': not JSON text: byte 0xd0 at offset 10 "
                                            r"is not valid UTF-8"):
        Topology.load(binary)
    for text, message in (("[1]", "expected an object, got list"), ("null", "expected an object, got NoneType")):
        with pytest.raises(TopologyError, match=message):
            Topology.from_json(text)
    data = star(workers=2).to_dict()
    with pytest.raises(TopologyError, match=r"hosts must be a list, got 3"):
        Topology.from_dict({**data, "hosts": 3})
    with pytest.raises(TopologyError, match=r"links\[0\] must be an object, got 7"):
        Topology.from_dict({**data, "links": [7]})
