"""A geo topology in Mininet (root): every site a star of hosts around its own ``innet-switch``,
the site switches joined by WAN veths with the topology's rate (and delay where the kernel can).

    with GeoMininetTestbed(geo()) as tb:           # 3 sites x 2 hosts, WAN 10M/40ms, 100M/10ms, 1G/2ms
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
  (:func:`innet.testbed.geo.testbed.wan_emulation` says ``netem``), else the delay stage of
  the switches' WAN ports (``innet-switch --port-delay PORT=MS``: each end holds its output
  back, so each direction is delayed once, TCP's ACKs included). The geo transport emulates
  nothing here (:meth:`GeoMininetTestbed.transport_shape` is None). Site LAN links stay
  unshaped veths (Mininet's HTB takes at most 1000 Mbit/s; the sites' links are 10 Gbit/s).

``stop`` ends every stage process, the switches and the host namespaces, and deletes the
veths (``innet_network`` also cleans what a crashed run of the same switch names left).
"""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from innet.host.geo.channel import LinkShape
from innet.testbed.core.testbed import TestbedError, TestbedOptions, is_failure
from innet.testbed.backends.mininet.clean import SWITCHES_FILE
from innet.testbed.geo.testbed import wan_emulation
from innet.testbed.geo.topology import sites_of
from innet.host.agent.transport import udp_transport
from innet.testbed.backends.mininet.net import MininetTestbed
from innet.testbed.core.topology import Topology

MININET_MAX_MBPS = 1000.0
"""Mininet's TCLink refuses rates above this (it logs an error and leaves the link unshaped)."""
SITES_PREFIX = "10.0.0.0/16"
"""Every site's subnet (10.0.i.0/24) lies in it; hosts reach it on-link through their switch."""


def port_delays(topology: Topology) -> dict[str, dict[int, float]]:
    """Per switch, its WAN ports' one-way delay in ms (for ``innet-switch --port-delay``)."""
    out: dict[str, dict[int, float]] = {s.name: {} for s in topology.switches}
    for c in topology.links:
        if c.a_port is not None and c.link.delay_ms:
            out[c.a][c.a_port] = c.link.delay_ms
            out[c.b][c.b_port] = c.link.delay_ms
    return out


def geo_mininet_topo(topology: Topology, netem: bool) -> Any:
    """A ``mininet.topo.Topo`` of a geo topology: WAN links shaped by HTB (``bw``) and delayed
    by netem (``netem``) or else by the switches' port delay stage; host links shaped only
    when their rate is within Mininet's range."""
    from mininet.link import TCLink
    from mininet.topo import Topo

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


class GeoMininetTestbed(MininetTestbed):
    """A geo topology in Mininet (see module docstring)."""

    multi_switch = True

    def __init__(self, topology: Topology, options: TestbedOptions | None = None) -> None:
        if topology.kind != "geo":
            raise TestbedError(f"topology {topology.name}: kind {topology.kind!r} is not 'geo'")
        super().__init__(topology, options or TestbedOptions(window=16))
        self.grpc_addresses: dict[str, str] = {}
        self.wan = wan_emulation("mininet")
        """``netem`` (the kernel delays WAN frames) or ``switch`` (the switches' WAN ports do)."""
        self.site_names = sites_of(topology)
        self.site_jobs: dict[str, Any] = {}
        """Site -> its ``sum`` JobSpec (sites with one host have none: nothing to aggregate)."""

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> "GeoMininetTestbed":
        from innet.controller.controller import Controller
        from innet.controller.pipeline import PipelineConfig
        from innet.controller.switch import SwitchEndpoint
        from innet.testbed.core.forwarding import forwarding

        self._check_root()  # before anything is recorded: nothing to clean up
        self.procs.open()
        try:
            (self.procs.dir / "topology.json").write_text(self.topology.to_json())
            self.grpc_address = self._start_network()
            specs = [SwitchEndpoint(s.name, self.grpc_addresses[s.name], s.device_id,
                                    timeout=max(30.0, self.options.start_timeout)) for s in self.topology.switches]
            self.controller = Controller(specs).connect()
            config = PipelineConfig.load(self.options.program, dict(self.options.defines) or None)
            names = [s.name for s in self.topology.switches]
            with ThreadPoolExecutor(len(names)) as pool:  # each switch builds its executor: in parallel
                list(pool.map(lambda name: self.controller.push(config, [name]), names))
            self.controller.install_forwarding(forwarding(self.topology, self.switch_port))
            for i, site in enumerate(self.site_names):
                if len(self.site_hosts(site)) >= 2:
                    self.site_jobs[site] = self._create_site_job(site, self.options.job_id + i)
            self._started = True
        except BaseException as error:
            self.stop(keep_logs=is_failure(type(error)) or self.options.keep_logs)
            raise
        return self

    @staticmethod
    def _check_root() -> None:
        if os.geteuid() != 0:
            raise TestbedError("the Mininet geo testbed needs root (network namespaces, veths); "
                               "without root, innet geo bench runs the sites on loopback")

    def _start_network(self) -> str:
        self._check_root()

        (self.procs.dir / SWITCHES_FILE).write_text("\n".join(s.name for s in self.topology.switches) + "\n")
        topo = geo_mininet_topo(self.topology, netem=self.wan == "netem")
        self._enter_network(topo, executor=self.options.switch_executor)
        for host in self.net.hosts:
            self.procs.adopt(f"mnhost-{host.name}", host.pid)
            out = host.cmd(f"ip route add {SITES_PREFIX} dev {host.name}-eth0 && echo ok")
            if "ok" not in out:
                raise TestbedError(f"host {host.name}: ip route add {SITES_PREFIX}: {out.strip()}")
        for s in self.topology.switches:
            address = self.net.get(s.name).grpc_address
            if address is None:
                raise TestbedError(f"switch {s.name} has no P4Runtime address; log {self.net.get(s.name).log_path}")
            self.grpc_addresses[s.name] = address
        return self.grpc_addresses[self.topology.switches[0].name]

    def switch_pid(self) -> int | None:
        return None

    # -- sites ----------------------------------------------------------------------------

    def site_hosts(self, site: str) -> tuple[str, ...]:
        """Hosts of ``site`` in topology order."""
        hosts = tuple(h.name for h in self.topology.workers if h.group == site)
        if not hosts:
            raise TestbedError(f"geo testbed: no site {site!r} (sites: {', '.join(self.site_names)})")
        return hosts

    def site_switch(self, site: str) -> str:
        return self.topology.uplink(self.site_hosts(site)[0]).b

    def _create_site_job(self, site: str, job_id: int) -> Any:
        from innet.controller.jobs import JobSpec

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

    def dp_agent(self, site: str, rank: int, epoch: int, elements: int) -> dict[str, Any]:
        """Host agent settings of replica ``rank`` of ``site`` (on the site's ``rank``-th host)
        for a stage gradient of ``elements`` values (``StageJob.dp["agent"]``)."""
        job = self.site_jobs[site]
        host = self.site_hosts(site)[rank]
        return {"job": job.job_id, "rank": rank, "num_workers": len(job.workers), "window": job.slot_count,
                "k": self.options.k, "epoch": epoch, "chunk_deadline": self.options.chunk_deadline,
                "transport": self.host_transport(host), "elements": elements}

    def stage_host(self, site: str, replica: int) -> str:
        """The host that runs pipeline ``replica``'s stage at ``site``."""
        hosts = self.site_hosts(site)
        if replica >= len(hosts):
            raise TestbedError(f"site {site!r} has {len(hosts)} hosts; pipeline replica {replica} needs "
                               f"{replica + 1}")
        return hosts[replica]

    def transport_shape(self, a: str, b: str) -> LinkShape | None:
        """What the geo transport has to emulate from site ``a`` to ``b``: nothing, the WAN
        veths have the rate (HTB) and the delay (netem or the switches' port delay)."""
        return None

    def host_transport(self, host: str) -> dict[str, Any]:
        switch = self.topology.switch(self.topology.uplink(host).b)
        return udp_transport(switch.ip, self.topology.host(host).address, self.options.agent_port)

    def spawn_stage(self, host: str, argv: Sequence[str], env: dict[str, str],
                    name: str = "stage") -> subprocess.Popen[bytes]:
        """Start a stage process on ``host`` (stdout and stderr piped; the caller ends it). It is
        recorded in the run's pids, so ``innet testbed cleanup`` ends it if the caller was killed."""
        if self.net is None:
            raise TestbedError(f"stage on {host}: the Mininet geo testbed is not up")
        popen: subprocess.Popen[bytes] = self.net.get(host).popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env})
        self.procs.adopt(f"geo {name} on {host}", popen.pid)
        return popen

    def wan_bytes(self) -> dict[str, int]:
        """Bytes sent so far on each WAN link end (``s1-eth101``...), from the interface counters."""
        out = {}
        for c in self.topology.links:
            if c.a_port is None:
                continue
            for sw, port in ((c.a, c.a_port), (c.b, c.b_port)):
                iface = f"{sw}-eth{port}"
                out[iface] = int((Path("/sys/class/net") / iface / "statistics" / "tx_bytes").read_text())
        return out


__all__ = ["GeoMininetTestbed", "geo_mininet_topo"]
