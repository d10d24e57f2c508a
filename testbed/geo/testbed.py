"""Bring a geo topology up: one innet switch per site (INA inside the site), WAN emulated
between sites in the geo transport.

Each site with at least two workers becomes its own single-switch testbed
(:func:`~innet.testbed.geo.topology.site_star`) on loopback UDP ports: an ``innet-switch``
process, the controller's forwarding and a ``sum`` job whose worker sets are the stage
replicas of that site. Stage traffic between sites runs over TCP with
:class:`~innet.host.geo.channel.ShapedChannel` applying the WAN link's rate and delay in
user space (docs/geo.md says why: this kernel has HTB but no netem). Sites come up one by
one and go down in reverse, every step even if another failed, so nothing is left behind.
"""

from __future__ import annotations

from typing import Any

from innet.testbed.core.testbed import TestbedOptions
from innet.host.geo.channel import LinkShape
from innet.testbed.geo.topology import site_star, sites_of, wan_shape
from innet.testbed.backends.loopback import LoopbackTestbed
from innet.testbed.core.topology import Topology


def wan_emulation(backend: str = "loopback") -> str:
    """Where WAN delay is emulated: on Mininet ``netem`` when the kernel has it, else
    ``switch`` (the site switches hold their WAN ports' output back: ``innet-switch
    --port-delay``); the rate is HTB there either way. On loopback there are no links, so it
    is ``transport`` (the geo transport's user-space shaper: rate and delay)."""
    if backend == "mininet":
        from innet.testbed.backends.mininet.impair import netem_available

        return "netem" if netem_available() else "switch"
    return "transport"


class GeoTestbed:
    """Site testbeds of a geo topology (loopback)."""

    __test__ = False

    def __init__(self, topology: Topology, options: TestbedOptions | None = None) -> None:
        if topology.kind != "geo":
            raise ValueError(f"topology {topology.name}: kind {topology.kind!r} is not 'geo'")
        self.topology = topology
        self.options = options or TestbedOptions(window=16)
        self.sites: dict[str, LoopbackTestbed] = {}
        """Site name -> its running testbed (sites with one worker have none: nothing to aggregate)."""

    def __enter__(self) -> "GeoTestbed":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> "GeoTestbed":
        try:
            for site in sites_of(self.topology):
                if sum(1 for h in self.topology.workers if h.group == site) < 2:
                    continue
                tb = LoopbackTestbed(site_star(self.topology, site), self.options)
                self.sites[site] = tb  # before start: a failed start is cleaned by its own stop
                tb.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        errors: list[BaseException] = []
        for site in reversed(list(self.sites)):
            try:
                self.sites[site].stop()
            except BaseException as error:  # keep taking the others down
                errors.append(error)
        self.sites.clear()
        if errors:
            raise errors[0]

    def has_ina(self, site: str) -> bool:
        """Whether ``site`` has an aggregation switch (two or more workers)."""
        return site in self.sites

    def attach_site(self, site: str) -> int:
        """A new worker set of ``site``'s job: its epoch."""
        return self.sites[site].attach()

    def stage_host(self, site: str, replica: int) -> str | None:
        """Where a stage runs: on loopback, a local process (None)."""
        return None

    def transport_shape(self, a: str, b: str) -> LinkShape | None:
        """What the geo transport emulates from site ``a`` to ``b``: the whole WAN link (rate
        and delay); there are no links on loopback."""
        return wan_shape(self.topology, a, b)

    def dp_agent(self, site: str, rank: int, epoch: int, elements: int) -> dict[str, Any]:
        """The host agent settings of replica ``rank`` of ``site`` for a stage whose gradient has
        ``elements`` values (``StageJob.dp["agent"]``), in the worker set attached at ``epoch``."""
        tb = self.sites[site]
        plan = tb.worker_plan(rank, (elements,), epoch)
        return {"job": plan.job, "rank": plan.rank, "num_workers": plan.num_workers, "window": plan.window,
                "k": plan.k, "epoch": plan.epoch, "chunk_deadline": self.options.chunk_deadline,
                "transport": plan.transport, "elements": elements}
