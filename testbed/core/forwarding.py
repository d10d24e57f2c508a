"""Forwarding of every P4 switch of a multi-switch topology: its address, a /32 route to
every host and switch it can reach (shortest path over switch-to-switch links), and proxy-ARP
entries for them. Rail and geo topologies share it; on rail-only a rail reaches only its own
GPUs because the topology has no path between rails.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Callable

from innet.testbed.core.topology import Topology

if TYPE_CHECKING:  # imported in forwarding(): GPU processes import this module (through the rail
    # grid) and innet.controller (finsy, grpc) would add ~0.2 s to their start-up
    from innet.controller.jobs import Forwarding


def _switch_graph(topo: Topology) -> dict[str, list[tuple[str, int]]]:
    """P4 switch -> [(neighbour switch, own port)]."""
    p4 = {s.name for s in topo.p4_switches}
    graph: dict[str, list[tuple[str, int]]] = {name: [] for name in p4}
    for c in topo.links:
        if c.a in p4 and c.b in p4 and c.a_port is not None:
            graph[c.a].append((c.b, c.a_port))
            graph[c.b].append((c.a, c.b_port))
    return graph


def _first_hops(graph: dict[str, list[tuple[str, int]]], source: str) -> dict[str, tuple[str, int]]:
    """For each switch reachable from ``source`` (itself excluded): (next switch, port out of source)."""
    hops: dict[str, tuple[str, int]] = {}
    todo = deque([(n, n, p) for n, p in graph[source]])
    while todo:
        node, first, port = todo.popleft()
        if node == source or node in hops:
            continue
        hops[node] = (first, port)
        todo.extend((n, first, port) for n, _ in graph[node])
    return hops


def forwarding(topo: Topology, port_of: Callable[[str], int] | None = None) -> dict[str, Forwarding]:
    """Forwarding of every P4 switch (see module docstring); ``port_of(host)`` is the host's
    switch port (default: its uplink's ``b_port``)."""
    from innet.controller.jobs import Forwarding, Route

    port_of = port_of or (lambda h: topo.uplink(h).b_port)
    graph = _switch_graph(topo)
    switches = {s.name: s for s in topo.p4_switches}
    out = {}
    for name, spec in switches.items():
        hops = _first_hops(graph, name)
        routes: list[Route] = []
        arp: list[tuple[str, str]] = []
        for h in topo.hosts:
            attached = topo.uplink(h.name).b
            if attached == name:
                routes.append(Route(f"{h.address}/32", h.mac, port_of(h.name)))
            elif attached in hops:
                nxt, port = hops[attached]
                routes.append(Route(f"{h.address}/32", switches[nxt].mac, port))
            else:
                continue
            arp.append((h.address, h.mac))
        for other, (nxt, port) in sorted(hops.items()):
            routes.append(Route(f"{switches[other].ip}/32", switches[nxt].mac, port))
            arp.append((switches[other].ip, switches[other].mac))
        out[name] = Forwarding(spec.mac, spec.ip, tuple(routes), tuple(arp))
    return out
