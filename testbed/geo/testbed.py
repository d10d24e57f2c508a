"""Bring a geo topology up: one innet switch per site (INA inside the site), WAN between sites.

    with GeoTestbed(geo(), backend="loopback") as tb:  # or "mininet" (root; innet.testbed.geo.mininet)
        epoch = tb.attach_site("a")                   # a new worker set of site a's ``sum`` job
        agent = tb.dp_agent("a", 0, epoch, 1000)      # host agent settings of s1h1 towards s1

Every site switch comes up, the controller pushes innet.p4 to each and installs
:func:`innet.testbed.core.forwarding.forwarding` (a remote site's hosts are routed out of the
WAN port towards it), and every site with at least two workers gets a ``sum`` job whose
worker set is the stage replicas of that site. On loopback the site switches are
``innet-switch`` processes on UDP ports (WAN ports peered to each other, unused by the
stages), and stage traffic between sites runs over TCP with
:class:`~innet.host.geo.channel.ShapedChannel` applying the WAN link's rate and delay in user
space (docs/geo.md says why). On Mininet the WAN is veths with the link's rate and delay
(see :mod:`innet.testbed.geo.mininet`) and the stages run on the site hosts.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Self, Sequence

from innet.controller.jobs import JobSpec
from innet.host.geo.channel import LinkShape
from innet.host.geo.specs import DpAgentSpec
from innet.testbed.backends.mininet import htb
from innet.testbed.backends.select import MininetParts, network_for
from innet.testbed.core.testbed import Testbed, TestbedError, TestbedOptions
from innet.testbed.core.topology import Topology
from innet.testbed.geo.mininet import MININET_MAX_MBPS, configure_sites, geo_mininet_topo, wan_emulation
from innet.testbed.geo.topology import sites_of, wan_shape


def bmv2_wan_problem(topology: Topology, wan: str) -> str | None:
    """Why BMv2 site switches cannot carry ``topology``'s WAN with emulation ``wan``, or None:
    without netem the WAN delay is innet-switch's port delay stage, which simple_switch_grpc lacks."""
    if wan != "switch" or not any(c.link.delay_ms for c in topology.links):
        return None
    return ("switch_impl bmv2: this kernel has no netem, so the geo testbed delays WAN frames in innet-switch's "
            "port delay stage, which simple_switch_grpc lacks; give the WAN links no delay (--wan A-B:MBPS:0,...) "
            "or use a kernel with netem (CONFIG_NET_SCH_NETEM)")


class GeoTestbed(Testbed):
    """A geo topology on a loopback or Mininet network (see module docstring)."""

    multi_switch = True

    def __init__(self, topology: Topology, options: TestbedOptions | None = None, backend: str = "loopback") -> None:
        if topology.kind != "geo":
            raise TestbedError(f"topology {topology.name}: kind {topology.kind!r} is not 'geo'")
        options = options or TestbedOptions(window=16)
        network = network_for(topology, options, backend,
                              MininetParts(topo=geo_mininet_topo, configure=configure_sites))
        super().__init__(topology, options, network)
        self.wan = wan_emulation(self.kind)
        problem = bmv2_wan_problem(topology, self.wan) if self.options.switch_impl == "bmv2" else None
        if problem is not None:
            raise TestbedError(problem)
        """``netem`` (the kernel delays WAN frames), ``switch`` (the switches' WAN ports do) or
        ``transport`` (loopback: the geo transport's shaper emulates the whole WAN link)."""
        self.site_names = sites_of(topology)
        self.site_jobs: dict[str, JobSpec] = {}
        """Site -> its ``sum`` JobSpec (sites with one host have none: nothing to aggregate)."""

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> Self:
        if self.kind == "mininet" and os.geteuid() != 0:  # before anything is recorded: nothing to clean up
            raise TestbedError("the Mininet geo testbed needs root (network namespaces, veths); "
                               "without root, innet geo bench runs the sites on loopback")
        return super().start()

    def install_jobs(self) -> None:
        """One ``sum`` job per site with two or more hosts (job id ``options.job_id + i``)."""
        for i, site in enumerate(self.site_names):
            if len(self.site_hosts(site)) >= 2:
                self.site_jobs[site] = self._create_site_job(site, self.options.job_id + i)

    def stop(self, keep_logs: bool = False) -> None:
        self.site_jobs.clear()
        super().stop(keep_logs)

    # -- sites ----------------------------------------------------------------------------

    def site_hosts(self, site: str) -> tuple[str, ...]:
        """Hosts of ``site`` in topology order."""
        hosts = tuple(h.name for h in self.topology.workers if h.group == site)
        if not hosts:
            raise TestbedError(f"geo testbed: no site {site!r} (sites: {', '.join(self.site_names)})")
        return hosts

    def site_switch(self, site: str) -> str:
        return self.topology.uplink(self.site_hosts(site)[0]).b

    def _create_site_job(self, site: str, job_id: int) -> JobSpec:
        hosts = self.site_hosts(site)
        job = JobSpec(job_id=job_id, workers=self.worker_specs(hosts), slot_base=0,
                      slot_count=self.options.window, k=self.options.k, mode="sum")
        switch = self.site_switch(site)
        self.controller.create_job(job, self.controller.plan_for(job, [switch]))
        self.job_hosts[job_id] = hosts
        return job

    def has_ina(self, site: str) -> bool:
        """Whether ``site`` has an aggregation job (two or more hosts)."""
        return site in self.site_jobs

    def attach_site(self, site: str) -> int:
        """A new worker set of ``site``'s job: its epoch."""
        return int(self.controller.attach(self.site_jobs[site].job_id))

    def dp_agent(self, site: str, rank: int, epoch: int, elements: int) -> DpAgentSpec:
        """Host agent settings of replica ``rank`` of ``site`` (on the site's ``rank``-th host)
        for a stage gradient of ``elements`` values (``StageJob.dp.agent``), in the worker
        set attached at ``epoch``."""
        job = self.site_jobs[site]
        host = self.site_hosts(site)[rank]
        return DpAgentSpec(job=job.job_id, rank=rank, num_workers=len(job.workers), window=job.slot_count,
                           k=self.options.k, epoch=epoch, chunk_deadline=self.options.chunk_deadline,
                           transport=self.host_transport(host), elements=elements)

    def stage_host(self, site: str, replica: int) -> str | None:
        """The host that runs pipeline ``replica``'s stage at ``site``; on loopback a local
        process (None)."""
        if self.kind != "mininet":
            return None
        hosts = self.site_hosts(site)
        if replica >= len(hosts):
            raise TestbedError(f"site {site!r} has {len(hosts)} hosts; pipeline replica {replica} needs "
                               f"{replica + 1}")
        return hosts[replica]

    def set_wan_rate(self, a: str, b: str, mbps: float) -> None:
        """Mininet: change the rate of the WAN link between sites ``a`` and ``b`` now, both
        directions (the HTB class Mininet shaped each end with), e.g. to make a link slower
        mid-run. Raises TestbedError (loopback, no such link, tc refused)."""
        if self.kind != "mininet":
            raise TestbedError("geo testbed: changing a WAN link's rate needs Mininet (loopback has no links)")
        ends = {self.site_switch(a), self.site_switch(b)}
        links = [c for c in self.topology.links if c.a_port is not None and {c.a, c.b} == ends]
        if not links:
            raise TestbedError(f"geo testbed: no WAN link between sites {a!r} and {b!r}")
        if not 0 < mbps <= MININET_MAX_MBPS:
            raise TestbedError(f"geo testbed: WAN rate {mbps:g} Mbit/s: must be > 0 and <= {MININET_MAX_MBPS:g}")
        c = links[0]
        for iface in (f"{c.a}-eth{c.a_port}", f"{c.b}-eth{c.b_port}"):
            done = subprocess.run(htb.rate_command(iface, mbps), capture_output=True, text=True, timeout=30)
            if done.returncode != 0:
                raise TestbedError(f"geo testbed: rate of {iface}: tc: {(done.stderr or done.stdout).strip()}")

    def transport_shape(self, a: str, b: str) -> LinkShape | None:
        """What the geo transport emulates from site ``a`` to ``b``: on loopback the whole WAN
        link (rate and delay; there are no links); on Mininet nothing, the WAN veths have the
        rate (HTB) and the delay (netem or the switches' port delay)."""
        return wan_shape(self.topology, a, b) if self.kind != "mininet" else None

    def spawn_stage(self, host: str, argv: Sequence[str], env: dict[str, str],
                    name: str = "stage") -> subprocess.Popen[bytes]:
        """Mininet: start a stage process on ``host`` (stdout and stderr piped; the caller ends
        it). It is recorded in the run's pids, so ``innet testbed cleanup`` ends it if the
        caller was killed."""
        net = getattr(self.network, "net", None)
        if net is None:
            raise TestbedError(f"stage on {host}: the Mininet geo testbed is not up")
        popen: subprocess.Popen[bytes] = net.get(host).popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env})
        self.procs.adopt(f"geo {name} on {host}", popen.pid)
        return popen

    def wan_bytes(self) -> dict[str, int] | None:
        """Mininet: bytes sent so far on each WAN link end (``s1-eth101``...), from the interface
        counters; None on loopback (no links)."""
        if self.kind != "mininet":
            return None
        out = {}
        for c in self.topology.links:
            if c.a_port is None:
                continue
            for sw, port in ((c.a, c.a_port), (c.b, c.b_port)):
                iface = f"{sw}-eth{port}"
                out[iface] = int((Path("/sys/class/net") / iface / "statistics" / "tx_bytes").read_text())
        return out
