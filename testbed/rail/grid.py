"""Rail topologies as the controller and the agents see them: the grid, routes, jobs, shards.

Pure functions of a :class:`~innet.testbed.core.topology.Topology` of kind ``rail-only`` or
``rail-optimized`` (docs/rail.md):

* :class:`RailGrid`: which host is GPU ``g`` of domain ``d``, the rail switches, the spine;
* :func:`forwarding`: every P4 switch's address, a /32 route to every host and switch it can
  reach (shortest path over switch-to-switch links) and proxy-ARP entries for them. On
  rail-only a rail reaches only its own GPUs: other ranks are reached through the HB domain;
* :func:`hierarchical_jobs`: the hierarchical INA job, one job id on every rail switch whose
  workers are that rail's GPUs (rank = domain index), the vector sharded one shard per rail
  (``ShardPlan``); the optimizer's averaging over all ``x*y`` GPUs is folded into ``lr``
  (each rail switch sums ``y`` contributions, each already an HB-domain sum of ``x``);
* :func:`flat_job`: every GPU on the spine (rail-optimized), for comparison;
* :func:`shard_bounds`: the element range each rail owns for a vector of ``n`` values, the
  same split the controller's ``ShardPlan`` makes, so agents and switches agree;
* :func:`host_routes`: on rail-only, the GPU hosts' routes to the GPUs off their rail, relayed
  by the HB peer on the destination's rail (PXN's two steps, for host traffic such as gloo);
* :func:`ring_order`: an order of the GPUs whose ring neighbours share a domain or a rail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from innet.wire.shard import ShardPlan
from innet.testbed.core.forwarding import forwarding
from innet.testbed.core.topology import HostSpec, SwitchSpec, Topology, TopologyError

if TYPE_CHECKING:  # imported where used: every rail GPU process imports this module for
    # shard_bounds, and innet.controller (finsy, grpc) would add ~0.2 s to its start-up
    from innet.controller.jobs import JobSpec, WorkerSpec

RAIL_KINDS = ("rail-only", "rail-optimized")
HB_PORT = 18800
"""TCP port of the HB-domain exchange on each host's HB address (Mininet)."""


@dataclass(frozen=True)
class RailGrid:
    """The x-by-y grid of a rail topology."""

    topology: Topology
    x: int
    """GPUs per HB domain (= rails)."""
    y: int
    """HB domains (= GPUs per rail)."""
    rails: tuple[str, ...]
    """Rail switch names, rail 0 first."""
    spine: str | None
    """The spine's name (rail-optimized) or None."""
    hosts: tuple[tuple[str, ...], ...]
    """``hosts[d][g]``: host name of GPU g of domain d (0-based)."""

    @classmethod
    def of(cls, topology: Topology) -> "RailGrid":
        if topology.kind not in RAIL_KINDS:
            raise TopologyError(f"topology {topology.name}: kind {topology.kind!r} is not one of "
                                f"{', '.join(RAIL_KINDS)}")
        rails = tuple(s.name for s in topology.switches if s.role == "rail")
        spines = [s.name for s in topology.switches if s.role == "spine"]
        domains = sorted({h.group for h in topology.workers if h.group is not None},
                         key=lambda g: int(g.lstrip("hb")))
        by_domain = {d: [h for h in topology.workers if h.group == d] for d in domains}
        hosts = []
        for d in domains:
            row = sorted(by_domain[d], key=lambda h: rails.index(topology.uplink(h.name).b))
            hosts.append(tuple(h.name for h in row))
        grid = cls(topology, len(rails), len(domains), rails, spines[0] if spines else None, tuple(hosts))
        if any(len(row) != grid.x for row in hosts):
            raise TopologyError(f"topology {topology.name}: every HB domain needs one GPU per rail ({grid.x})")
        return grid

    def position(self, host: str) -> tuple[int, int]:
        """(domain, gpu) of ``host``, 0-based."""
        for d, row in enumerate(self.hosts):
            if host in row:
                return d, row.index(host)
        raise TopologyError(f"topology {self.topology.name}: {host!r} is not a GPU of the grid")

    def domain(self, d: int) -> tuple[HostSpec, ...]:
        return tuple(self.topology.host(h) for h in self.hosts[d])

    def rail(self, g: int) -> tuple[HostSpec, ...]:
        """GPU ``g`` of every domain, by domain."""
        return tuple(self.topology.host(row[g]) for row in self.hosts)


def shard_bounds(elements: int, k: int, rails: int) -> list[tuple[int, int]]:
    """Element range of each rail's shard of an ``elements``-value vector (whole chunks of ``k``)."""
    plan = ShardPlan.contiguous(math.ceil(elements / k), [str(r) for r in range(rails)])
    return [(min(s.first_chunk * k, elements), min((s.first_chunk + s.chunks) * k, elements)) for s in plan.shards]


def hierarchical_jobs(grid: RailGrid, job_id: int, *, window: int, k: int, agent_port: int, mode: str = "sum",
                      param_chunks: int = 0, lr: float = 0.0, beta: float = 0.0, grad_frac_bits: int = 16,
                      param_frac_bits: int = 16, slot_base: int = 0,
                      port_of: Callable[[str], int] | None = None,
                      domains: Sequence[int] | None = None) -> tuple[dict[str, JobSpec], ShardPlan]:
    """Per rail switch its JobSpec (workers: the rail's GPUs of ``domains``, default every
    domain, rank = position in ``domains``), and the shard plan."""
    from innet.controller.jobs import JobSpec

    port_of = port_of or (lambda h: grid.topology.uplink(h).b_port)
    plan = ShardPlan.contiguous(param_chunks, list(grid.rails))
    rows = list(range(grid.y)) if domains is None else list(domains)
    jobs = {}
    for g, rail in enumerate(grid.rails):
        workers = tuple(rail_worker(grid, d, g, rank, agent_port, port_of) for rank, d in enumerate(rows))
        # The rail switch averages over y contributions, each the sum of x gradients: lr/x.
        jobs[rail] = JobSpec(job_id=job_id, workers=workers, slot_base=slot_base, slot_count=window, k=k,
                             mode=mode, lr=lr / grid.x, beta=beta, grad_frac_bits=grad_frac_bits,
                             param_frac_bits=param_frac_bits, param_chunks=param_chunks)
    return jobs, plan


def rail_worker(grid: RailGrid, domain: int, gpu: int, rank: int, agent_port: int,
                port_of: Callable[[str], int] | None = None) -> WorkerSpec:
    """GPU ``gpu`` of ``domain`` as worker ``rank`` of its rail's job."""
    from innet.controller.jobs import WorkerSpec

    h = grid.topology.host(grid.hosts[domain][gpu])
    port = (port_of or (lambda name: grid.topology.uplink(name).b_port))(h.name)
    return WorkerSpec(rank=rank, port=port, mac=h.mac, ip=h.address, udp_port=agent_port)


def flat_job(grid: RailGrid, job_id: int, *, window: int, k: int, agent_port: int, **params: Any) -> JobSpec:
    """Every GPU (rank = its topology rank) aggregating on the spine (rail-optimized only)."""
    from innet.controller.jobs import JobSpec, WorkerSpec

    if grid.spine is None:
        raise TopologyError(f"topology {grid.topology.name}: flat INA needs a spine (rail-optimized); "
                            "rail-only has none")
    topo = grid.topology
    spine_port = {c.a: c.b_port for c in topo.links if c.b == grid.spine}
    workers = tuple(WorkerSpec(rank=h.rank or 0, port=spine_port[topo.uplink(h.name).b], mac=h.mac, ip=h.address,
                               udp_port=agent_port) for h in topo.workers)
    return JobSpec(job_id=job_id, workers=workers, slot_base=params.pop("slot_base", 0), slot_count=window, k=k,
                   **params)


def switch_of(topo: Topology, host: str) -> SwitchSpec:
    """The rail switch ``host``'s NIC is on."""
    return topo.switch(topo.uplink(host).b)


@dataclass(frozen=True)
class HostRoute:
    """A GPU host's /32 route to another GPU's NIC address through an HB peer."""

    dst: str
    """The destination GPU's NIC address."""
    via: str
    """HB address of the relay: the own domain's GPU on the destination's rail."""


def host_routes(grid: RailGrid) -> dict[str, tuple[HostRoute, ...]]:
    """Per GPU host, its routes to the GPUs it cannot reach over its own NIC.

    Rail-only has no path between rails in the NIC domain: GPU ``(d, g)`` reaches ``(d', g')``,
    ``g' != g``, by handing the packet over the HB fabric to ``(d, g')`` (which forwards it on
    rail ``g'``; for ``d' == d`` that relay is the destination itself). The Rail-only paper's two-step
    forwarding, done by the hosts' kernels (IP forwarding on, reverse-path filter off, since
    replies come back over the other GPU's relay). Rail-optimized needs none: the spine
    joins the rails."""
    out: dict[str, tuple[HostRoute, ...]] = {}
    for d, row in enumerate(grid.hosts):
        for g, host in enumerate(row):
            routes: list[HostRoute] = []
            if grid.spine is None:
                for other in grid.topology.workers:
                    d2, g2 = grid.position(other.name)
                    if g2 != g:
                        relay = grid.topology.host(row[g2]).hb_address
                        assert relay is not None  # RailGrid hosts all have an HB interface
                        routes.append(HostRoute(other.address, relay))
            out[host] = tuple(routes)
    return out


def ring_order(grid: RailGrid) -> tuple[str, ...]:
    """The GPUs in an order whose cyclic neighbours share an HB domain or a rail (none relayed).

    Each domain is visited in one run, entered on the rail the previous domain left on: the
    entry rails ``e_d`` only need ``e_d != e_{d+1}`` around the cycle (0, 1, 0, 1, ... and a
    third rail closing an odd cycle). With two rails and an odd number of domains that is
    impossible, so each rail is visited in one run instead (down rail 1, up rail 2). The first
    GPU is ``d1g1``, topology rank 0, which hosts gloo's rendezvous."""
    x, y = grid.x, grid.y
    if y % 2 == 1 and x == 2:
        return tuple(grid.hosts[d][0] for d in range(y)) + tuple(grid.hosts[d][1] for d in reversed(range(y)))
    entry = [d % 2 for d in range(y)]
    if y % 2 == 1:
        entry[-1] = 2
    order: list[str] = []
    for d in range(y):
        first, last = entry[d], entry[(d + 1) % y]
        middle = [g for g in range(x) if g not in (first, last)]
        order.extend(grid.hosts[d][g] for g in [first, *middle, last])
    return tuple(order)
