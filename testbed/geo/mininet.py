"""A geo topology in Mininet (root): every site a star of hosts around its own ``innet-switch``,
the site switches joined by WAN veths with the topology's rate (and delay where the kernel can).

    with GeoTestbed(geo(), backend="mininet") as tb:  # 3 sites x 2 hosts, WAN 10M/40ms, 100M/10ms, 1G/2ms
        epoch = tb.attach_site("a")                # a new worker set of site a's ``sum`` job
        agent = tb.dp_agent("a", 0, epoch, 1000)   # host agent settings of s1h1 towards s1

What runs where:

- **Sites**: switch ``s<i>`` (an ``InnetSwitchNode``), hosts ``s<i>h<j>`` on ports 1..; the
  controller pushes innet.p4 to every switch, installs IPv4 routes and proxy ARP for every
  host on every switch (:func:`innet.testbed.core.forwarding.forwarding`: a remote site's hosts are
  routed out of the WAN port towards it) and one ``sum`` job per site with two or more
  hosts (job id ``options.job_id + i - 1``): in-network aggregation inside the site.
- **Hosts** reach the other sites through their switch: ``10.0.0.0/16`` is on-link, the
  switch answers ARP for remote hosts.
- **WAN links** (switch ports 101..): the rate is HTB on both ends (Mininet ``TCLink bw``, so
  each direction); the one-way delay is netem on the same link when the kernel has netem
  (:func:`wan_emulation` says ``netem``), else the delay stage of
  the switches' WAN ports (``innet-switch --port-delay PORT=MS``: each end holds its output
  back, so each direction is delayed once, TCP's ACKs included). The geo transport emulates
  nothing here (:meth:`~innet.testbed.geo.testbed.GeoTestbed.transport_shape` is None). Site LAN links stay
  unshaped veths (Mininet's HTB takes at most 1000 Mbit/s; the sites' links are 10 Gbit/s).

``stop`` ends every stage process, the switches and the host namespaces, and deletes the
veths (``innet_network`` also cleans what a crashed run of the same switch names left).
"""

from __future__ import annotations

from typing import Any

from innet.testbed.backends.mininet.impair import netem_available
from innet.testbed.backends.mininet.net import MininetNetwork
from innet.testbed.core.testbed import TestbedError, TestbedOptions
from innet.testbed.core.topology import Topology

MININET_MAX_MBPS = 1000.0
"""Mininet's TCLink refuses rates above this (it logs an error and leaves the link unshaped)."""
SITES_PREFIX = "10.0.0.0/16"
"""Every site's subnet (10.0.i.0/24) lies in it; hosts reach it on-link through their switch."""


def wan_emulation(backend: str = "loopback") -> str:
    """Where WAN delay is emulated: on Mininet ``netem`` when the kernel has it, else
    ``switch`` (the site switches hold their WAN ports' output back: ``innet-switch
    --port-delay``); the rate is HTB there either way. On loopback there are no links, so it
    is ``transport`` (the geo transport's user-space shaper: rate and delay)."""
    if backend == "mininet":
        return "netem" if netem_available() else "switch"
    return "transport"


def port_delays(topology: Topology) -> dict[str, dict[int, float]]:
    """Per switch, its WAN ports' one-way delay in ms (for ``innet-switch --port-delay``)."""
    out: dict[str, dict[int, float]] = {s.name: {} for s in topology.switches}
    for c in topology.links:
        if c.a_port is not None and c.link.delay_ms:
            out[c.a][c.a_port] = c.link.delay_ms
            out[c.b][c.b_port] = c.link.delay_ms
    return out


def geo_mininet_topo(topology: Topology, options: TestbedOptions | None = None, netem: bool | None = None) -> Any:
    """A ``mininet.topo.Topo`` of a geo topology: WAN links shaped by HTB (``bw``) and delayed
    by netem (``netem``) or else by the switches' port delay stage; host links shaped only
    when their rate is within Mininet's range."""
    from mininet.link import TCLink
    from mininet.topo import Topo

    if netem is None:
        netem = wan_emulation("mininet") == "netem"
    topo = Topo()
    delays = {} if netem else port_delays(topology)
    for h in topology.hosts:
        topo.addHost(h.name, ip=h.ip, mac=h.mac)
    for s in topology.switches:
        topo.addSwitch(s.name, device_id=s.device_id, port_delays=delays.get(s.name, {}))
    for c in topology.links:
        opts: dict[str, Any] = {"port2": c.b_port}
        if c.a_port is not None:
            opts["port1"] = c.a_port
        if c.link.loss_pct or c.link.jitter_ms:
            raise TestbedError(f"link {c.a}-{c.b}: geo testbeds emulate rate and delay only, not loss or jitter")
        params: dict[str, Any] = {}
        if c.link.bw_mbps is not None and c.link.bw_mbps <= MININET_MAX_MBPS:
            params["bw"] = float(c.link.bw_mbps)
        if netem and c.link.delay_ms:
            params["delay"] = f"{c.link.delay_ms:g}ms"
        if params:
            opts.update(cls=TCLink, **params)
        topo.addLink(c.a, c.b, **opts)
    return topo


def configure_sites(network: MininetNetwork) -> None:
    """Once Mininet is up: every host reaches the other sites on-link through its switch."""
    for host in network.net.hosts:
        out = host.cmd(f"ip route add {SITES_PREFIX} dev {host.name}-eth0 && echo ok")
        if "ok" not in out:
            raise TestbedError(f"host {host.name}: ip route add {SITES_PREFIX}: {out.strip()}")


__all__ = ["configure_sites", "geo_mininet_topo", "wan_emulation"]
