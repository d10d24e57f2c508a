"""The Mininet form of a geo topology, as data: which link gets HTB, which gets netem, and
what the geo transport still has to emulate (no root needed: nothing is brought up)."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.testbed.core import testbed as bringup
from innet.testbed.geo.bench import GeoBenchConfig, GeoBenchError, wan_description
from innet.testbed.geo.mininet import geo_mininet_topo
from innet.testbed.geo.testbed import GeoTestbed
from innet.testbed.geo.topology import Site, Wan, geo
from innet.testbed.core.topology import Link, star


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


def test_without_netem_the_site_switches_delay_their_wan_ports() -> None:
    topo = geo_mininet_topo(geo(), netem=False)
    assert topo.nodeInfo("s1")["port_delays"] == {101: 40.0, 102: 2.0}
    assert topo.nodeInfo("s2")["port_delays"] == {101: 40.0, 102: 10.0}
    assert topo.nodeInfo("s3")["port_delays"] == {101: 10.0, 102: 2.0}
    assert geo_mininet_topo(geo(), netem=True).nodeInfo("s1")["port_delays"] == {}


def test_innet_switch_node_passes_port_delays_on_its_command_line() -> None:
    from innet.testbed.backends.mininet.switch import InnetSwitchNode

    node = InnetSwitchNode.__new__(InnetSwitchNode)  # no namespace: only the command line is built
    node.program, node.device_id, node.grpc_port, node.log_level, node.executor = None, 2, 0, "warning", "auto"
    node.cpu_port, node.port_delays = None, {102: 10.0, 101: 40.0}
    node.data_ports = lambda: {101: "s2-eth101", 102: "s2-eth102"}  # type: ignore[method-assign]
    cmd = node.command()
    assert cmd[cmd.index("--port-delay"):] == ["--port-delay", "101=40", "--port-delay", "102=10"]


def test_on_mininet_the_transport_emulates_nothing_and_stages_sit_on_site_hosts() -> None:
    tb = GeoTestbed(geo(), backend="mininet")
    assert tb.wan in ("netem", "switch")
    assert tb.transport_shape("a", "b") is None
    assert tb.stage_host("c", 1) == "s3h2"
    with pytest.raises(bringup.TestbedError, match="site 'c' has 2 hosts; pipeline replica 2 needs 3"):
        tb.stage_host("c", 2)


def test_geo_mininet_testbed_wants_a_geo_topology() -> None:
    with pytest.raises(bringup.TestbedError, match="kind 'star' is not 'geo'"):
        GeoTestbed(star(2), backend="mininet")


def test_bench_config_names_a_bad_testbed_and_results_say_which_emulation_applied() -> None:
    with pytest.raises(GeoBenchError, match="testbed 'docker': expected 'loopback' or 'mininet'"):
        GeoBenchConfig(testbed="docker")
    assert wan_description("loopback").startswith("transport: rate + delay")
    assert wan_description("mininet").split(":")[0] in ("kernel", "switch")


def test_without_root_the_cli_says_so_in_one_line_and_exits_1(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    import os

    from innet import cli

    from innet.testbed.core.processes import STATE_DIR

    def ours() -> set[Path]:  # run dirs this process opened (other processes share STATE_DIR)
        return {d for d in (STATE_DIR.iterdir() if STATE_DIR.exists() else ())
                if (d / "owner").exists() and (d / "owner").read_text().split()[0] == str(os.getpid())}

    before = ours()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    code = cli.main(["geo", "bench", "--backend", "mininet", "--wan", WITHIN_CEILING, "--steps", "2", "--runs",
                     "naive/none", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip() == ("innet geo bench: the Mininet geo testbed needs root (network namespaces, veths); "
                           "without root, innet geo bench runs the sites on loopback")
    assert ours() == before  # no run was recorded


WITHIN_CEILING = "a-b:10:40,b-c:100:10,a-c:100:2"
"""The default WAN with its 1 Gbit/s link at 100 Mbit/s: every link within the Mininet ceiling."""


def test_a_wan_rate_above_the_mininet_ceiling_is_refused_naming_the_link_and_the_ceiling() -> None:
    with pytest.raises(GeoBenchError) as refused:
        GeoBenchConfig(testbed="mininet", wan_ceiling_mbps=119.0)  # the default WAN's a-c is 1000 Mbit/s
    assert str(refused.value) == (
        "geo bench: WAN link a-c at 1000 Mbit/s is above the 119 Mbit/s this machine's Mininet WAN (HTB + the site "
        "switches) carries: configure at most 119 (e.g. --wan a-c:119:2) or raise --wan-ceiling after measuring")
    slow = geo(wan=(Wan("a", "b", Link(bw_mbps=10, delay_ms=40)), Wan("b", "c", Link(bw_mbps=100, delay_ms=10)),
                    Wan("a", "c", Link(bw_mbps=100, delay_ms=2))))
    assert GeoBenchConfig(testbed="mininet", topology=slow).topology is slow
    assert GeoBenchConfig(testbed="mininet", wan_ceiling_mbps=1000.0).wan_ceiling_mbps == 1000.0
    assert GeoBenchConfig(testbed="loopback").testbed == "loopback"  # the transport's shaper has no such ceiling
    with pytest.raises(GeoBenchError, match="WAN link b-c at 100 Mbit/s is above the 50 Mbit/s"):
        GeoBenchConfig(testbed="mininet", topology=slow, wan_ceiling_mbps=50.0)


def test_the_cli_refuses_an_unemulable_wan_rate_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from innet import cli

    assert cli.main(["geo", "bench", "--backend", "mininet", "--wan", "a-b:10:40,b-c:100:10,a-c:400:2",
                     "--steps", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("innet geo bench: WAN link a-c at 400 Mbit/s is above the ")
    assert cli.main(["geo", "bench", "--backend", "mininet", "--wan-ceiling", "0", "--steps", "2"]) == 2
    assert "--wan-ceiling: " in capsys.readouterr().err

