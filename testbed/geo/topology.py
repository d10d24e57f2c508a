"""Geo-distributed topologies: sites (stars of workers around their own innet switch) joined
by WAN links between the site switches.

    topo = geo()                                   # 3 sites x 2 workers, the default WAN below
    topo = geo([Site("hk", 4), Site("sz", 2)], [Wan("hk", "sz", Link(bw_mbps=50, delay_ms=20))])

The value is an ordinary :class:`~innet.testbed.core.topology.Topology` (``kind="geo"``): site
switches have role ``site``, hosts carry their site in ``group``, WAN links are
switch-to-switch links on ports 101.. of each switch. :func:`site_star` cuts out one site as
a single-switch star (how a site is brought up, with in-network aggregation inside it), and
:func:`network_view` gives the planner (OP-Fence) the bandwidth and delay between every
pair of workers.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field, replace
from typing import Sequence

from innet.host.geo.channel import LinkShape
from innet.host.geo.opfence import SiteNetwork
from innet.testbed.core.topology import Connection, HostSpec, Link, SwitchSpec, Topology, TopologyError

LAN = Link(bw_mbps=10_000)
"""A site's local links (10 Gbit/s)."""
WAN_PORT_BASE = 100
"""A site switch's WAN links use ports 101, 102, ..."""
MAX_SITES = 9


@dataclass(frozen=True)
class Site:
    """One site: its workers and their local link."""

    name: str
    """Site name (1..8 lowercase letters/digits), e.g. ``a`` or ``hk``."""
    workers: int = 2
    """Workers at the site (each a host on the site's switch), 1..9."""
    link: Link = field(default_factory=lambda: LAN)
    """Link of every worker to the site switch."""


@dataclass(frozen=True)
class Wan:
    """A WAN link between two sites' switches."""

    a: str
    b: str
    link: Link


DEFAULT_SITES = (Site("a"), Site("b"), Site("c"))
DEFAULT_WAN = (Wan("a", "b", Link(bw_mbps=10, delay_ms=40)),
               Wan("b", "c", Link(bw_mbps=100, delay_ms=10)),
               Wan("a", "c", Link(bw_mbps=1000, delay_ms=2)))
"""The default topology's three WAN classes: 10 Mbit/s / 40 ms, 100 Mbit/s / 10 ms, 1 Gbit/s / 2 ms."""


def geo(sites: Sequence[Site] = DEFAULT_SITES, wan: Sequence[Wan] = DEFAULT_WAN, name: str | None = None) -> Topology:
    """Site ``i`` (1-based): switch ``s<i>`` (device id i, 10.0.i.254), hosts ``s<i>h<j>`` at
    10.0.i.j/24; worker ranks run site by site."""
    sites = tuple(sites)
    if not 2 <= len(sites) <= MAX_SITES:
        raise TopologyError(f"geo: {len(sites)} sites; need 2..{MAX_SITES}")
    index: dict[str, int] = {}
    for i, s in enumerate(sites, start=1):
        if s.name in index:
            raise TopologyError(f"geo: site name {s.name!r} is used twice")
        if isinstance(s.workers, bool) or not isinstance(s.workers, int) or not 1 <= s.workers <= 9:
            raise TopologyError(f"geo: site {s.name!r} workers={s.workers!r} must be an integer within 1..9")
        index[s.name] = i
    hosts: list[HostSpec] = []
    switches: list[SwitchSpec] = []
    links: list[Connection] = []
    rank = 0
    for i, s in enumerate(sites, start=1):
        sw = SwitchSpec(name=f"s{i}", device_id=i, role="site", ip=f"10.0.{i}.254", mac=f"02:00:00:00:{i:02x}:fe")
        switches.append(sw)
        for j in range(1, s.workers + 1):
            h = HostSpec(name=f"s{i}h{j}", ip=f"10.0.{i}.{j}/24", mac=f"00:00:00:00:{i:02x}:{j:02x}",
                         rank=rank, group=s.name)
            rank += 1
            hosts.append(h)
            links.append(Connection(a=h.name, b=sw.name, b_port=j, link=s.link))
    wan_ports = {s.name: WAN_PORT_BASE for s in sites}
    seen: set[frozenset[str]] = set()
    for w in wan:
        for end in (w.a, w.b):
            if end not in index:
                raise TopologyError(f"geo: WAN link {w.a}-{w.b} names unknown site {end!r} "
                                    f"(sites: {', '.join(index)})")
        if w.a == w.b or frozenset((w.a, w.b)) in seen:
            raise TopologyError(f"geo: WAN link {w.a}-{w.b} is a loop or given twice")
        seen.add(frozenset((w.a, w.b)))
        wan_ports[w.a] += 1
        wan_ports[w.b] += 1
        links.append(Connection(a=f"s{index[w.a]}", b=f"s{index[w.b]}", a_port=wan_ports[w.a],
                                b_port=wan_ports[w.b], link=w.link))
    topo = Topology(name=name or f"geo{len(sites)}", kind="geo", hosts=tuple(hosts), switches=tuple(switches),
                    links=tuple(links))
    if any(len(p) < len(sites) for p in _wan_paths(topo).values()):
        raise TopologyError("geo: the WAN links do not connect every site")
    return topo


def sites_of(topo: Topology) -> list[str]:
    """Site names in switch order."""
    out: list[str] = []
    for sw in topo.switches:
        group = next((h.group for c in topo.links if c.b == sw.name and c.a_port is None
                      for h in [topo.host(c.a)]), None)
        if group is None:
            raise TopologyError(f"topology {topo.name}: switch {sw.name} has no hosts")
        out.append(group)
    return out


def _switch_of_site(topo: Topology, site: str) -> str:
    for h in topo.hosts:
        if h.group == site:
            return topo.uplink(h.name).b
    raise TopologyError(f"topology {topo.name}: no site {site!r} (sites: {', '.join(sorted({h.group or '' for h in topo.hosts}))})")


def _wan_paths(topo: Topology) -> dict[str, dict[str, tuple[float, float]]]:
    """Per switch, to every reachable switch: (total delay ms, bottleneck Mbit/s) of the direct
    WAN link when there is one (sites route over their own link, as WAN routing does), else
    of the lowest-delay path through other sites."""
    adj: dict[str, list[tuple[str, Link]]] = {s.name: [] for s in topo.switches}
    for c in topo.links:
        if c.a_port is not None:
            adj[c.a].append((c.b, c.link))
            adj[c.b].append((c.a, c.link))
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for src in adj:
        best: dict[str, tuple[float, float]] = {}
        heap: list[tuple[float, float, str]] = [(0.0, -float("inf"), src)]
        while heap:
            delay, negbw, node = heapq.heappop(heap)
            if node in best:
                continue
            best[node] = (delay, -negbw)
            for peer, link in adj[node]:
                bw = link.bw_mbps if link.bw_mbps is not None else float("inf")
                heapq.heappush(heap, (delay + (link.delay_ms or 0.0), -min(-negbw, bw), peer))
        for peer, link in adj[src]:
            best[peer] = (link.delay_ms or 0.0, link.bw_mbps if link.bw_mbps is not None else float("inf"))
        out[src] = best
    return out


def wan_link(topo: Topology, a: str, b: str) -> Link:
    """The effective link between sites ``a`` and ``b`` (lowest-delay path, bottleneck rate)."""
    delay, bw = _wan_paths(topo)[_switch_of_site(topo, a)][_switch_of_site(topo, b)]
    return Link(bw_mbps=None if bw == float("inf") else bw, delay_ms=delay)


def wan_shape(topo: Topology, a: str, b: str) -> LinkShape:
    """What the geo transport emulates for traffic from site ``a`` to site ``b``."""
    link = wan_link(topo, a, b)
    return LinkShape(bw_mbps=link.bw_mbps, delay_ms=link.delay_ms or 0.0)


def site_star(topo: Topology, site: str) -> Topology:
    """Site ``site`` alone, as a single-switch star (ranks 0.. in site order)."""
    sw_name = _switch_of_site(topo, site)
    hosts = [h for h in topo.hosts if h.group == site]
    if len(hosts) < 2:
        raise TopologyError(f"site {site!r} has {len(hosts)} worker; a site star (in-network aggregation) needs 2")
    hosts = [replace(h, rank=r, group=None) for r, h in enumerate(hosts)]
    links = tuple(c for c in topo.links if c.b == sw_name and c.a_port is None)
    sw = replace(topo.switch(sw_name), role="aggregation")
    return Topology(name=f"site{site}", kind="star", hosts=tuple(hosts), switches=(sw,), links=links)


def network_view(topo: Topology, speed: dict[str, float] | None = None) -> SiteNetwork:
    """Bandwidth and delay between every pair of workers (for OP-Fence): inside a site the
    two host links; across sites the host links and the WAN path (bottleneck rate, summed delay)."""
    devices = tuple(h.name for h in topo.workers)
    paths = _wan_paths(topo)
    bw: dict[tuple[str, str], float] = {}
    delay: dict[tuple[str, str], float] = {}
    for x, y in itertools.combinations(devices, 2):
        lx, ly = topo.uplink(x), topo.uplink(y)
        rates = [l.link.bw_mbps for l in (lx, ly) if l.link.bw_mbps is not None]
        d = (lx.link.delay_ms or 0.0) + (ly.link.delay_ms or 0.0)
        if lx.b != ly.b:
            if ly.b not in paths[lx.b]:
                raise TopologyError(f"topology {topo.name}: no WAN path between {lx.b} and {ly.b}")
            wd, wbw = paths[lx.b][ly.b]
            d += wd
            if wbw != float("inf"):
                rates.append(wbw)
        bw[(x, y)] = min(rates) if rates else 100_000.0
        delay[(x, y)] = d
    return SiteNetwork(devices, bw, delay, speed)


MININET_WAN_CEILING_MBPS = 119.0
"""The highest WAN rate the Mininet geo testbed carries on this machine (2 shared cores): a
link configured at 1 Gbit/s (HTB on the veths, frames forwarded by the user-space site
switches) was probed at 119 Mbit/s, and at 164.6 Mbit/s in a second run, both under load ~10;
links at 100 Mbit/s and below were probed within 10% of their rate when the machine was not
saturated. On an idle machine (load 0.2-0.6, probes no longer sharing the CPU with training)
150 and 200 Mbit/s read within 10% (140.0, 181.8), 250 read 208.9 and 1 Gbit/s 312.2, so an idle
machine may pass ``--wan-ceiling 200``. Measure again (``innet geo bench --backend mininet``
prints each link as probed) before raising it."""


def wan_links(topo: Topology) -> list[tuple[str, str, Link]]:
    """Every direct WAN link as (site, site, link): the links joining two site switches."""
    site = {_switch_of_site(topo, s): s for s in sites_of(topo)}
    return [(site[c.a], site[c.b], c.link) for c in topo.links if c.a in site and c.b in site]


def unemulable_wan(topo: Topology, ceiling_mbps: float) -> str | None:
    """Why ``topo``'s WAN cannot be emulated at a ceiling of ``ceiling_mbps`` (the first link
    above it, named with the ceiling and the flag that fits), or None: a link the testbed
    cannot carry would run slower than configured and every number measured on it would be
    about another network."""
    for a, b, link in wan_links(topo):
        if link.bw_mbps is not None and link.bw_mbps > ceiling_mbps:
            return (f"WAN link {a}-{b} at {link.bw_mbps:g} Mbit/s is above the {ceiling_mbps:g} Mbit/s this "
                    f"machine's Mininet WAN (HTB + the site switches) carries: configure at most {ceiling_mbps:g} "
                    f"(e.g. --wan {a}-{b}:{ceiling_mbps:g}:{link.delay_ms:g}) or raise --wan-ceiling after measuring")
    return None

