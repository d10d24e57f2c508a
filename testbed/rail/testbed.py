"""Rail-only and rail-optimized topologies brought up: one ``innet-switch`` per rail (and spine),
the HB fabrics, the controller over every switch, and the hierarchical INA job.

    with RailTestbed(rail_only(domains=2, gpus_per_domain=4), backend="loopback") as tb:  # or "mininet"
        results = tb.run_hierarchical([1000, 65536], exact=True)   # per GPU, one result per size
        finals = tb.run_training("momentum", steps=5, param_chunks=8, lr=0.1, beta=0.9)
        flat = tb.run_flat([1000])                                 # rail-optimized: through the spine

``start``: every P4 switch comes up (loopback: UDP ports, switch-to-switch ports with
explicit peers; Mininet: veths, each HB fabric a Linux bridge), the controller pushes
innet.p4 to all of them and installs :func:`innet.testbed.core.forwarding.forwarding` on each, then
creates the hierarchical ``sum`` job (``TestbedOptions.job_id``) on every rail switch and,
on rail-optimized, the flat job (``job_id + 1``) on the spine.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from innet.testbed.backends.loopback import LOCALHOST, LoopbackNetwork
from innet.testbed.backends.mininet.net import MininetNetwork
from innet.testbed.backends.select import network_for
from innet.testbed.core.freeport import free_ports
from innet.testbed.core.ina_worker import WORKER_MODULE as INA_WORKER, WorkerPlan
from innet.testbed.core.testbed import Testbed, TestbedError, TestbedOptions, WorkerResult, wait_outputs
from innet.testbed.core.topology import Topology
from innet.testbed.rail.mininet import configure_hosts, rail_mininet_topo
from innet.testbed.rail.grid import HB_PORT, RailGrid, flat_job, hierarchical_jobs, ring_order, switch_of
from innet.testbed.rail.worker import WORKER_MODULE as RAIL_WORKER, RailPlan


class RailTestbed(Testbed):
    """A rail topology on a loopback or Mininet network (see module docstring)."""

    multi_switch = True

    def __init__(self, topology: Topology, options: TestbedOptions | None = None, backend: str = "auto",
                 spares: int = 0) -> None:
        options = options or TestbedOptions()
        network = network_for(topology, options, backend,
                              mininet={"topo": rail_mininet_topo, "configure": configure_hosts, "executor": False})
        super().__init__(topology, options, network)
        self.grid = RailGrid.of(self.topology)
        if not 0 <= spares < self.grid.y:
            raise TestbedError(f"topology {self.topology.name}: {spares} spare HB domains of {self.grid.y}; "
                               f"keep at least one domain in the job (0..{self.grid.y - 1} spares)")
        self.active: list[int] = list(range(self.grid.y - spares))
        """The HB domains in the job, by rank (the last ``spares`` domains wait as spares;
        :mod:`innet.testbed.rail.spare` swaps one in for a failed domain)."""
        self.rail_jobs: dict[str, Any] = {}
        """The hierarchical job's JobSpec on each rail switch."""
        self.flat: Any = None
        """The flat job on the spine (rail-optimized), or None."""
        self._hb: dict[str, tuple[str, int]] = {}
        self._a2a: dict[str, dict[str, tuple[str, int]]] = {}

    def install_jobs(self) -> None:
        """The hierarchical job on every rail switch and, with a spine, the flat job on it."""
        self.job = self.create_job()
        if self.grid.spine is not None:
            self.flat = self.create_flat_job()

    # -- jobs -----------------------------------------------------------------------------

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

    def reinstall(self, mode: str = "sum", **params: Any) -> Any:
        """Destroy the hierarchical job on every rail switch and create it again (after a
        failure): fresh registers and epoch 0, so no state of the failed run can leak."""
        if self.job is not None:
            self.controller.destroy_job(self.job.job_id)
            self.job = None
        self.job = self.create_job(mode=mode, **params)
        return self.job

    def create_flat_job(self, mode: str = "sum", **params: Any) -> Any:
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

    def host_transport(self, host: str) -> dict[str, Any]:
        return self.transport_to(host, switch_of(self.topology, host).name)

    def transport_to(self, host: str, switch: str) -> dict[str, Any]:
        """Transport dict of ``host``'s agent towards P4 switch ``switch`` (through its rail switch)."""
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

    def freeze_switch(self, name: str) -> None:
        """Loopback: make P4 switch ``name`` stop forwarding (SIGSTOP: a hung switch); :meth:`thaw_switch` undoes it."""
        self._loopback("freeze a switch").freeze_switch(name)

    def thaw_switch(self, name: str) -> None:
        self._loopback("thaw a switch").thaw_switch(name)

    def set_nic_link(self, host: str, up: bool) -> None:
        """Mininet: take ``host``'s NIC link down (or up again) at its rail switch's end."""
        if not isinstance(self.network, MininetNetwork):
            raise TestbedError(f"set the NIC link of {host}: needs the Mininet backend, this is {self.kind}")
        self.network.set_nic_link(host, up)

    def _loopback(self, what: str) -> LoopbackNetwork:
        if not isinstance(self.network, LoopbackNetwork):
            raise TestbedError(f"{what}: needs the loopback backend, this is {self.kind}")
        return self.network

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

    def spawn_rail(self, op: str, epoch: int | None = None, **fields: Any) -> list[tuple[str, subprocess.Popen[bytes]]]:
        """Start one ``rail_worker`` per GPU: a new worker set (one attach moves every rail), or
        the set attached at ``epoch``."""
        epoch = self.attach() if epoch is None else epoch
        procs = []
        for host, plan in self.rail_plans(op, epoch, **fields):
            name = f"rail-{host}"
            procs.append((name, self.spawn_on(host, name, [sys.executable, "-m", RAIL_WORKER, plan.to_json()],
                                              stdout_pipe=True)))
        return procs

    def run_hierarchical(self, sizes: Sequence[int], repeats: int = 1, timeout: float = 120.0,
                         exact: bool = True, collective: str = "ina") -> list[list[WorkerResult]]:
        """Hierarchical allreduce of ``sizes`` (exact integers, checked) on every GPU; per global
        rank. ``collective``: ``ina`` (the rail switches sum) or ``ring`` (the GPUs of each rail
        reduce-scatter and all-gather over TCP through it: NCCL's hierarchical ring)."""
        if collective != "ring":
            procs = self.spawn_rail("allreduce", sizes=tuple(sizes), repeats=repeats)
            return self._collect(procs, timeout, "hierarchical allreduce")
        rail = {h.name: self.alltoall_addresses(h.name)["rail"] for h in self.topology.workers}
        epoch = self.attach()
        procs = []
        for host, plan in self.rail_plans("allreduce", epoch, sizes=tuple(sizes), repeats=repeats):
            plan = replace(plan, collective="ring", rail_peers=tuple(rail[row[plan.gpu]] for row in self.active_rows()))
            name = f"rail-{host}"
            procs.append((name, self.spawn_on(host, name, [sys.executable, "-m", RAIL_WORKER, plan.to_json()],
                                              stdout_pipe=True)))
        return self._collect(procs, timeout, "hierarchical ring allreduce")

    def run_training(self, mode: str, steps: int, param_chunks: int, lr: float, beta: float = 0.0,
                     initial: np.ndarray | None = None, timeout: float = 120.0) -> dict[str, Any]:
        """Replace the job by an ``sgd``/``momentum`` one holding ``initial`` (int32, default
        zeros), run ``steps`` hierarchical steps of ``rail_worker.train_gradient``; the final
        parameters of every GPU (by global rank), the switches' registers and the job's
        per-rail optimizer integers."""
        if self.job is not None:
            self.controller.destroy_job(self.job.job_id)
            self.job = None
        self.job = self.create_job(mode=mode, param_chunks=param_chunks, lr=lr, beta=beta)
        size = param_chunks * self.options.k
        start = np.zeros(size, np.int32) if initial is None else np.asarray(initial, np.int32)
        self.controller.load_params(self.job.job_id, start)
        procs = self.spawn_rail("train", steps=steps, params=size)
        outputs = self.collect_lines(procs, timeout, "hierarchical training")
        finals = {}
        for lines in outputs:
            for d in lines:
                if "final" in d:
                    finals[int(d["rank"])] = np.asarray(d["final"], np.int64).astype(np.int32)
        registers = self.controller.read_params(self.job.job_id, as_float=False)
        infos = {rail: self.controller[rail].job(self.job.job_id) for rail in self.grid.rails}
        return {"finals": finals, "registers": np.asarray(registers, np.int32), "jobs": infos, "initial": start}

    def run_digits(self, config: Any, timeout: float = 300.0) -> dict[str, Any]:
        """Train the digits model (:mod:`innet.testbed.rail.digits`, ``config`` a ``DigitsConfig``
        over every GPU) with the rail switches as the optimizer, replacing the job. The final
        parameters of every GPU (by global rank), the switches' registers, each rail's
        installed job, the initial vector and every GPU's ``{"step", "loss"}`` lines."""
        from dataclasses import asdict

        initial = self.digits_job(config)
        procs = self.spawn_rail("digits", params=initial.size, digits=asdict(config))
        return self.digits_outputs(procs, initial, timeout)

    def digits_job(self, config: Any) -> np.ndarray:
        """Replace the job by ``config``'s (a ``DigitsConfig`` over the job's GPUs) holding its
        initial parameters; those parameters."""
        if config.gpus != self.gpus:
            raise TestbedError(f"digits training for {config.gpus} GPUs on {self.topology.name} "
                               f"({self.gpus} GPUs in the job)")
        if self.job is not None:
            self.controller.destroy_job(self.job.job_id)
            self.job = None
        chunks = config.param_chunks(self.options.k)
        self.job = self.create_job(mode=config.mode, param_chunks=chunks, lr=config.lr,
                                   beta=config.beta if config.mode == "momentum" else 0.0,
                                   grad_frac_bits=config.grad_frac_bits, param_frac_bits=config.param_frac_bits)
        initial = config.initial(self.options.k)
        self.controller.load_params(self.job.job_id, initial)
        return initial

    def digits_outputs(self, procs: list[tuple[str, subprocess.Popen[bytes]]], initial: np.ndarray,
                       timeout: float) -> dict[str, Any]:
        """Wait for a digits run's GPUs (:meth:`run_digits`' result)."""
        outputs = self.collect_lines(procs, timeout, "digits training")
        finals, lines = {}, {}
        for rows in outputs:
            for d in rows:
                if "final" in d:
                    finals[int(d["rank"])] = np.asarray(d["final"], np.int64).astype(np.int32)
            if rows:
                lines[int(rows[0]["rank"])] = rows
        registers = self.controller.read_params(self.job.job_id, as_float=False)
        infos = {rail: self.controller[rail].job(self.job.job_id) for rail in self.grid.rails}
        return {"finals": finals, "registers": np.asarray(registers, np.int32), "jobs": infos, "initial": initial,
                "lines": lines}

    def predict_training(self, out: dict[str, Any], mode: str, steps: int) -> np.ndarray:
        """The parameters :class:`innet.host.wire.switch_model.SwitchModel` gives for the gradients of
        :meth:`run_training`'s ``out``, shard by shard with each rail's installed integers."""
        from innet.host.wire.switch_model import SwitchModel
        from innet.host.wire import Mode
        from innet.testbed.rail.grid import shard_bounds
        from innet.testbed.rail.worker import train_gradient

        initial = out["initial"]
        bounds = shard_bounds(initial.size, self.options.k, self.grid.x)
        gpus = self.gpus
        grads = [[train_gradient(r, s, initial.size) for r in range(gpus)] for s in range(steps)]
        parts = []
        for g, rail in enumerate(self.grid.rails):
            info = out["jobs"][rail]
            a, b = bounds[g]
            model = SwitchModel(Mode[mode.upper()], initial[a:b].copy(), info.lr, info.lr_shift, info.beta,
                                info.beta_shift)
            for s in range(steps):
                model.step([grads[s][r][a:b] for r in range(gpus)])
            parts.append(model.params)
        return np.concatenate(parts)

    def collect_lines(self, procs: list[tuple[str, subprocess.Popen[bytes]]], timeout: float,
                       what: str) -> list[list[dict[str, Any]]]:
        import json

        outputs = wait_outputs(self.procs, procs, timeout, what)
        return [[json.loads(line) for line in outputs[name].decode().splitlines() if line.startswith("{")]
                for name, _ in procs]

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

    def run_alltoall(self, pair_bytes: int, repeats: int = 1, route: str | None = None,
                     timeout: float = 120.0) -> list[list[WorkerResult]]:
        """Uniform all-to-all of ``pair_bytes`` per GPU pair on every GPU; ``route`` defaults to
        ``direct`` on rail-optimized and ``two-step`` on rail-only (which has no other)."""
        from innet.testbed.rail.alltoall_worker import WORKER_MODULE as A2A_WORKER, AllToAllPlan

        route = route or ("direct" if self.grid.spine is not None else "two-step")
        if route == "direct" and self.grid.spine is None:
            raise TestbedError(f"topology {self.topology.name}: the direct all-to-all needs a spine; "
                               "rail-only routes through the HB domain (two-step)")
        addr = {h.name: self.alltoall_addresses(h.name) for h in self.topology.workers}
        procs = []
        for d, row in enumerate(self.grid.hosts):
            for g, host in enumerate(row):
                if route == "two-step":
                    fields: dict[str, Any] = {
                        "hb_peers": tuple(addr[h]["hb"] for h in row),
                        "rail_peers": tuple(addr[r[g]]["rail"] for r in self.grid.hosts)}
                else:
                    fields = {"direct_peers": tuple(addr[other.name]["direct_hb" if self.grid.position(other.name)[0] == d
                                                                   else "direct"] for other in self.topology.workers),
                              "direct_bind": addr[host]["direct_bind"]}
                plan = AllToAllPlan(x=self.grid.x, y=self.grid.y, domain=d, gpu=g, pair_bytes=pair_bytes, route=route,
                                    repeats=repeats, **fields)
                name = f"a2a-{host}"
                procs.append((name, self.spawn_on(host, name, [sys.executable, "-m", A2A_WORKER, plan.to_json()],
                                                  stdout_pipe=True)))
        return self._collect(procs, timeout, f"all-to-all ({route})")

    def run_gloo(self, sizes: Sequence[int], repeats: int = 3, timeout: float = 300.0,
                 master_port: int | None = None) -> list[list[WorkerResult]]:
        """gloo ring allreduce over every GPU, gloo ranks in :func:`ring_order` (ring neighbours
        share an HB domain or a rail). On rail-only the other pairs of gloo's full mesh reach
        each other through the hosts' relay routes (Mininet); per gloo rank."""
        from innet.testbed.core.gloo import command, gloo_env

        ring = ring_order(self.grid)
        master = self.gloo_master()
        master_port = master_port or self.free_port()
        procs = []
        for rank, host in enumerate(ring):
            argv = command(rank, len(ring), master, master_port, sizes, repeats, count_iface=self.count_iface(host))
            name = f"gloo-{host}"
            procs.append((name, self.spawn_on(host, name, argv, env=gloo_env(self.gloo_iface(host), master,
                                                                              master_port), stdout_pipe=True)))
        return self._collect(procs, timeout, "gloo allreduce")

    def run_flat(self, sizes: Sequence[int], repeats: int = 1, exact: bool = True,
                 timeout: float = 120.0) -> list[list[WorkerResult]]:
        """Flat INA through the spine (rail-optimized): every GPU in one job of ``x*y`` workers."""
        if self.flat is None:
            raise TestbedError(f"topology {self.topology.name}: flat INA needs a spine (rail-optimized)")
        assert self.grid.spine is not None
        epoch = int(self.controller.attach(self.flat.job_id))
        procs = []
        for h in self.topology.workers:
            plan = WorkerPlan(job=self.flat.job_id, rank=h.rank or 0, num_workers=len(self.topology.workers),
                              window=self.options.window, k=self.options.k,
                              transport=self.transport_to(h.name, self.grid.spine), sizes=tuple(sizes),
                              epoch=epoch, repeats=repeats, exact=exact, chunk_deadline=self.options.chunk_deadline,
                              count_iface=self.count_iface(h.name))
            name = f"flat-{h.name}"
            procs.append((name, self.spawn_on(h.name, name, [sys.executable, "-m", INA_WORKER, plan.to_json()],
                                              stdout_pipe=True)))
        return self._collect(procs, timeout, "flat allreduce")
