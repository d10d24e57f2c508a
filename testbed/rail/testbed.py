"""Rail-only and rail-optimized topologies brought up: one ``innet-switch`` per rail (and spine),
the HB fabrics, the controller over every switch, and the hierarchical INA job.

    with RailTestbed(rail_only(domains=2, gpus_per_domain=4), backend="loopback") as tb:  # or "mininet"
        results = workloads.hierarchical(tb, [1000, 65536])   # per GPU, one result per size
        run = workloads.training(tb, "momentum", steps=5, param_chunks=8, lr=0.1, beta=0.9)
        flat = workloads.flat(tb, [1000])                      # rail-optimized: through the spine

This class is the bring-up and what every workload needs of it: the jobs, the GPUs' plans
and addresses, one way to start workers, and the faults the backend can inject. The
workloads (:mod:`innet.testbed.rail.workloads`) and the spare take-over
(:mod:`innet.testbed.rail.spare`) are functions taking the testbed.

``start``: every P4 switch comes up (loopback: UDP ports, switch-to-switch ports with
explicit peers; Mininet: veths, each HB fabric a Linux bridge), the controller pushes
innet.p4 to all of them and installs :func:`innet.testbed.core.forwarding.forwarding` on each, then
creates the hierarchical ``sum`` job (``TestbedOptions.job_id``) on every rail switch and,
on rail-optimized, the flat job (``job_id + 1``) on the spine.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING, Any, Sequence

from innet.host.agent.transport import TransportConfig
from innet.testbed.backends.loopback import LOCALHOST
from innet.testbed.backends.select import MininetParts, network_for
from innet.testbed.core.freeport import free_ports
from innet.testbed.core.testbed import Testbed, TestbedError, TestbedOptions, WorkerResult
from innet.testbed.core.topology import Topology
from innet.testbed.rail.mininet import configure_hosts, rail_mininet_topo
from innet.testbed.rail.grid import HB_PORT, RailGrid, flat_job, hierarchical_jobs, switch_of
from innet.testbed.rail.worker import WORKER_MODULE as RAIL_WORKER, RailPlan

if TYPE_CHECKING:
    from innet.controller.jobs import JobSpec


class RailTestbed(Testbed):
    """A rail topology on a loopback or Mininet network (see module docstring)."""

    multi_switch = True

    def __init__(self, topology: Topology, options: TestbedOptions | None = None, backend: str = "auto",
                 spares: int = 0) -> None:
        options = options or TestbedOptions()
        network = network_for(topology, options, backend,
                              MininetParts(topo=rail_mininet_topo, configure=configure_hosts, executor=False))
        super().__init__(topology, options, network)
        self.grid = RailGrid.of(self.topology)
        if not 0 <= spares < self.grid.y:
            raise TestbedError(f"topology {self.topology.name}: {spares} spare HB domains of {self.grid.y}; "
                               f"keep at least one domain in the job (0..{self.grid.y - 1} spares)")
        self.active: list[int] = list(range(self.grid.y - spares))
        """The HB domains in the job, by rank (the last ``spares`` domains wait as spares;
        :mod:`innet.testbed.rail.spare` swaps one in for a failed domain)."""
        self.rail_jobs: dict[str, JobSpec] = {}
        """The hierarchical job's JobSpec on each rail switch."""
        self.flat: JobSpec | None = None
        """The flat job on the spine (rail-optimized), or None."""
        self._hb: dict[str, tuple[str, int]] = {}
        self._a2a: dict[str, dict[str, tuple[str, int]]] = {}

    def install_jobs(self) -> None:
        """The hierarchical job on every rail switch and, with a spine, the flat job on it."""
        self.job = self.create_job()
        if self.grid.spine is not None:
            self.flat = self.create_flat_job()

    # -- jobs (``replace_job``, the base's, destroys the job and creates it again: fresh
    #    registers and epoch 0, so no state of an earlier or failed run can leak) ----------

    def create_job(self, job_id: int | None = None, mode: str = "sum", hosts: Sequence[str] | None = None,
                   **params: Any) -> Any:
        """The hierarchical job on every rail switch (``params``: ``param_chunks``, ``lr``,
        ``beta``, ``grad_frac_bits``, ``param_frac_bits``); the rail-0 JobSpec."""
        if hosts is not None:
            raise TestbedError("rail testbeds run the hierarchical job over every GPU (hosts=None)")
        jobs, plan = hierarchical_jobs(self.grid, job_id if job_id is not None else self.options.job_id,
                                       window=self.options.window, k=self.options.k,
                                       agent_port=self.options.agent_port, mode=mode, port_of=self.switch_port,
                                       domains=self.active, **params)
        self.controller.create_sharded_job(jobs, plan)
        self.rail_jobs = jobs
        return jobs[self.grid.rails[0]]

    def create_flat_job(self, mode: str = "sum", **params: Any) -> JobSpec:
        job = flat_job(self.grid, self.options.job_id + 1, window=self.options.window, k=self.options.k,
                       agent_port=self.options.agent_port, mode=mode, **params)
        assert self.grid.spine is not None
        self.controller.create_job(job, self.controller.plan_for(job, [self.grid.spine]))
        return job

    def counters(self) -> dict[str, int]:
        """The hierarchical job's counters summed over the rail switches."""
        out: dict[str, int] = {}
        for rail in self.grid.rails:
            for name, cells in self.controller[rail].counters(self.job.job_id).items():
                out[name] = out.get(name, 0) + cells.get(self.job.job_id, 0)
        return out

    def rail_counters(self, rail: str) -> dict[str, int]:
        node = self.controller[rail]
        return {name: cells.get(self.job.job_id, 0) for name, cells in node.counters(self.job.job_id).items()}

    # -- per host -------------------------------------------------------------------------

    def host_transport(self, host: str) -> TransportConfig:
        """The transport of ``host``'s agent towards its rail switch."""
        return self.transport_to(host, switch_of(self.topology, host).name)

    def transport_to(self, host: str, switch: str) -> TransportConfig:
        """The transport of ``host``'s agent towards P4 switch ``switch`` (through its rail
        switch; :meth:`TestbedNetwork.transport_to`)."""
        return self.network.transport_to(host, switch)

    def hb_address(self, host: str) -> tuple[str, int]:
        """Where ``host`` listens for its HB domain's exchanges: on Mininet its HB address; on
        loopback a port of 127.0.0.1 (unshaped: the "fast" fabric)."""
        if self.kind == "mininet":
            address = self.topology.host(host).hb_address
            assert address is not None
            return address, HB_PORT
        if not self._hb:
            self._hb = {h.name: (LOCALHOST, p) for h, p in zip(self.topology.workers,
                                                               free_ports(len(self.topology.workers)))}
        return self._hb[host]

    # -- faults (the backend's; one that cannot emulate a fault says so) ------------------

    def freeze_switch(self, name: str) -> None:
        """Make P4 switch ``name`` stop forwarding, as a hung switch does (loopback: SIGSTOP);
        :meth:`thaw_switch` undoes it."""
        self.network.freeze_switch(name)

    def thaw_switch(self, name: str) -> None:
        self.network.thaw_switch(name)

    def set_nic_link(self, host: str, up: bool) -> None:
        """Take ``host``'s NIC link down (or up again) at its rail switch's end (Mininet)."""
        self.network.set_nic_link(host, up)

    # -- runs -----------------------------------------------------------------------------

    def active_rows(self) -> list[tuple[str, ...]]:
        """The job's HB domains' hosts, by rank."""
        return [self.grid.hosts[d] for d in self.active]

    @property
    def gpus(self) -> int:
        """GPUs in the job (spare domains not counted)."""
        return self.grid.x * len(self.active)

    def rail_plans(self, op: str, epoch: int, **fields: Any) -> list[tuple[str, RailPlan]]:
        """Every GPU of the job: (host, plan), by rank."""
        return [pair for d, row in enumerate(self.active_rows()) for pair in self.domain_plans(row, d, op, epoch,
                                                                                               **fields)]

    def domain_plans(self, row: Sequence[str], rank: int, op: str, epoch: int,
                     **fields: Any) -> list[tuple[str, RailPlan]]:
        """The GPUs of one HB domain (``row``: its hosts) as job rank ``rank``."""
        peers = tuple(self.hb_address(h) for h in row)
        out = []
        for g, host in enumerate(row):
            sw = switch_of(self.topology, host)
            plan = RailPlan(job=self.job.job_id, domain=rank, gpu=g, x=self.grid.x, y=len(self.active),
                            window=self.options.window, k=self.options.k, transport=self.host_transport(host),
                            epoch=epoch, hb_peers=peers, hb_names=tuple(row), switch=f"{sw.name} ({sw.ip})", op=op,
                            chunk_deadline=self.options.chunk_deadline, **fields)
            out.append((host, plan))
        return out

    def spawn_workers(self, module: str, prefix: str,
                      plans: Sequence[tuple[str, Any]]) -> list[tuple[str, subprocess.Popen[bytes]]]:
        """Start ``python -m module PLAN_JSON`` on each (host, plan) pair, named
        ``<prefix>-<host>`` with stdout piped (the workers' JSON lines); the caller waits
        for them (:func:`innet.testbed.rail.workloads.collect_results`)."""
        procs = []
        for host, plan in plans:
            name = f"{prefix}-{host}"
            procs.append((name, self.spawn_on(host, name, [sys.executable, "-m", module, plan.to_json()],
                                              stdout_pipe=True)))
        return procs

    def spawn_rail(self, op: str, epoch: int | None = None, **fields: Any) -> list[tuple[str, subprocess.Popen[bytes]]]:
        """Start one ``rail_worker`` per GPU: a new worker set (one attach moves every rail), or
        the set attached at ``epoch``."""
        epoch = self.attach() if epoch is None else epoch
        return self.spawn_workers(RAIL_WORKER, "rail", self.rail_plans(op, epoch, **fields))

    def alltoall_addresses(self, host: str) -> dict[str, tuple[str, int]]:
        """Where ``host`` listens for all-to-all groups: ``hb``, ``rail`` and ``direct``.

        Mininet: the HB group on the HB address, the rail group on the NIC address; the direct
        group listens on both and is reached over HB from the own domain, over the NIC from the
        others. Loopback: every group on 127.0.0.1 (the all-to-all does not cross the switches)."""
        if self.kind == "mininet":
            h = self.topology.host(host)
            assert h.hb_address is not None
            return {"hb": (h.hb_address, HB_PORT + 1), "rail": (h.address, HB_PORT + 2),
                    "direct": (h.address, HB_PORT + 3), "direct_hb": (h.hb_address, HB_PORT + 3),
                    "direct_bind": ("0.0.0.0", HB_PORT + 3)}
        if not self._a2a:
            workers = [w.name for w in self.topology.workers]
            self.hb_address(workers[0])
            # never an HB port: a GPU of the host ring listens on both at once
            taken = {port for _, port in self._hb.values()}
            ports = iter([p for p in free_ports(3 * len(workers) + len(taken)) if p not in taken])
            self._a2a = {h: {"hb": (LOCALHOST, next(ports)), "rail": (LOCALHOST, next(ports)),
                             "direct": (LOCALHOST, p)} for h in workers for p in [next(ports)]}
            for name in workers:
                self._a2a[name]["direct_hb"] = self._a2a[name]["direct_bind"] = self._a2a[name]["direct"]
        return self._a2a[host]

    def run_gloo(self, sizes: Sequence[int], repeats: int = 3, timeout: float = 300.0,
                 master_port: int | None = None) -> list[list[WorkerResult]]:
        """gloo's ring over every GPU in :func:`~innet.testbed.rail.grid.ring_order`
        (:func:`innet.testbed.rail.workloads.gloo`), so the base testbed's gloo run means
        the same on a rail topology."""
        from innet.testbed.rail import workloads

        return workloads.gloo(self, sizes, repeats, timeout, master_port)
