"""The testbed lifecycle shared by every system and backend: switches up, pipeline, forwarding, jobs.

    with open_testbed(star(workers=4), backend="loopback") as tb:   # innet.testbed.backends.select
        results = tb.run_ina([1024, 65536])              # one WorkerResult list per rank
        gloo = tb.run_gloo([1024, 65536])

A testbed is a topology value, a system (this class for the single-switch star; rail and geo
subclass it once) and a :class:`~innet.testbed.core.network.TestbedNetwork` from
``innet.testbed.backends`` (composition: a system never inherits a backend).

``start`` (or ``with``): open a :class:`ProcessGroup` (marked, recorded processes), bring
the network up, connect the controller to every P4 switch, push ``innet.p4``, install
forwarding (:func:`innet.testbed.core.forwarding.forwarding`: switch address, a /32 route
and a proxy-ARP entry per host) and the system's jobs (here the ``sum`` job over every
worker). ``stop`` undoes all of it in ``finally`` blocks, newest first; a crash of the
owning process is handled by ``innet.testbed.backends.mininet.clean``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Self, Sequence

from innet.host.agent.transport import TransportConfig
from innet.testbed.core.gloo import command as gloo_command, gloo_env
from innet.testbed.core.ina_worker import WORKER_MODULE, WorkerPlan
from innet.testbed.core.processes import STATE_DIR, ProcessGroup
from innet.testbed.core.forwarding import forwarding
from innet.testbed.core.network import TestbedNetwork
from innet.testbed.core.freeport import P4RUNTIME_BASE, THRIFT_BASE, predictable_ports
from innet.testbed.core.state import (
    SwitchState,
    TestbedState,
    TestbedStateError,
    claim,
    claimed_ports,
    new_state,
    remove_state,
    with_switches,
    write_state,
)
from innet.testbed.core.topology import Topology
from innet.testbed.core.paths import P4_DIR

MAX_WINDOW = 1024
"""Most slots one job may use: p4/innet.p4's default INNET_SLOTS."""

P4_PROGRAM = P4_DIR / "innet.p4"
"""innet.p4 in the repository (the package's ``p4/``)."""


class TestbedError(RuntimeError):
    """Bring-up or a run on the testbed failed; names the step and the process log."""

    __test__ = False  # not a pytest test class


@dataclass(frozen=True)
class TestbedOptions:
    """How to bring a topology up (independent of the topology itself)."""

    __test__ = False  # not a pytest test class

    program: Path = P4_PROGRAM
    """innet.p4 source, or an innet-p4c output directory, pushed by the controller."""
    defines: tuple[tuple[str, str], ...] = ()
    """Preprocessor defines when ``program`` is a source, e.g. ``(("INNET_K", "256"),)``."""
    k: int = 64
    """Values per packet; must equal the program's ``INNET_K``."""
    job_id: int = 1
    """Id of the default job."""
    window: int = 64
    """Slots of the default job (outstanding chunks per worker)."""
    agent_port: int = 18767
    """UDP port of every host agent (each Mininet host has its own address)."""
    switch_loss: float = 0.0
    """Loopback only: drop probability on the switch's UDP port output (``innet-switch --loss``)."""
    switch_dup: float = 0.0
    """Loopback only: duplication probability on the switch's UDP port output."""
    switch_log_level: str = "warning"
    """``innet-switch --log-level``."""
    switch_executor: str = "auto"
    """``innet-switch --executor``: native (generated C), python (the reference) or auto
    (native when a C compiler is present and the program is supported)."""
    switch_impl: str = "innet"
    """The switch: ``innet`` (innet-switch) or ``bmv2`` (p4lang's simple_switch_grpc, Mininet only;
    ``program`` compiled by p4c-bm2-ss, registers through simple_switch_CLI; see ``innet.testbed.backends.bmv2``)."""
    start_timeout: float = 60.0
    """Seconds the switch may take to come up."""
    chunk_deadline: float = 20.0
    """Seconds an agent waits for one chunk before it reports the missing workers."""
    state_dir: Path = STATE_DIR
    """Run records (pids, logs); what ``cleanup`` reads after a crash."""
    keep_logs: bool = False
    """Keep the run directory (process logs) after a clean stop; it is always kept after an error
    (but not after KeyboardInterrupt, i.e. Ctrl-C or the SIGTERM of ``innet testbed down``)."""
    link_loss_bpf: bool = False
    """Mininet only: emulate the topology's link loss with the cls_bpf random drop even when the
    kernel has netem (without netem it always is; see ``innet.testbed.backends.mininet.impair``)."""
    link_dup_pct: float = 0.0
    """Mininet only: percent of frames duplicated on every host link, each direction (cls_bpf +
    mirred, see ``innet.testbed.backends.mininet.impair``); link loss is the topology's ``Link.loss_pct``."""
    small_frames_first: bool = False
    """Mininet only: rate-shaped links send frames of at most 128 bytes (TCP's ACKs) before
    queued data, so TCP flows in both directions of a link keep it busy
    (``innet.testbed.backends.mininet.smallfirst``)."""
    name: str | None = None
    """Name of the testbed in its state file (``innet testbed status``, ``--testbed NAME``);
    None: the first free ``tb<N>``. A name a running testbed has is refused."""
    fixed_ports: bool = False
    """Switch ``n`` (0-based, topology order) listens for P4Runtime on 9559+n and, BMv2, for
    Thrift on 9090+n, or on the next free port when taken (``Testbed.port_notes`` says which);
    False: any free port (what tests and benchmarks use: nothing to collide with)."""

    def __post_init__(self) -> None:
        if not 0 <= self.switch_loss < 1:
            raise ValueError(f"testbed switch_loss={self.switch_loss}: must be within 0..1 (1 excluded)")
        if not 0 <= self.switch_dup < 1:
            raise ValueError(f"testbed switch_dup={self.switch_dup}: must be within 0..1 (1 excluded)")
        if not 0 <= self.link_dup_pct < 100:
            raise ValueError(f"testbed link_dup_pct={self.link_dup_pct}: must be within 0..100 (100 excluded)")
        if self.switch_impl not in ("innet", "bmv2"):
            raise ValueError(f"testbed switch_impl={self.switch_impl!r}: expected innet or bmv2")
        if not 1 <= self.window <= MAX_WINDOW:
            raise ValueError(f"testbed window={self.window}: must be within 1..{MAX_WINDOW} (INNET_SLOTS)")


def topology_mtu(topology: Topology) -> int:
    """The smallest MTU of the topology's links (1500 where a link leaves it unset)."""
    return min((c.link.mtu or 1500 for c in topology.links), default=1500)


def options_for(topology: Topology, k: int | None = None, **fields: Any) -> TestbedOptions:
    """TestbedOptions whose K (and ``INNET_K`` define) is ``k``, or else the largest
    supported K whose frame fits every link of ``topology`` (``wire.k_for_mtu``)."""
    from innet.wire import IP_OVERHEAD, k_for_mtu, message_len

    mtu = topology_mtu(topology)
    if k is None:
        k = k_for_mtu(mtu)
    elif IP_OVERHEAD + message_len(k) > mtu:
        raise ValueError(f"K={k}: a {IP_OVERHEAD + message_len(k)}-byte innet packet exceeds the "
                         f"links' MTU {mtu} (largest K that fits: {k_for_mtu(mtu)})")
    defines = tuple(d for d in fields.pop("defines", ()) if d[0] != "INNET_K")
    if k != 64:
        defines += (("INNET_K", str(k)),)
    if k >= 1024:  # the switch compiles K registers per value kind: minutes on a loaded 2-core machine
        fields["start_timeout"] = max(float(fields.get("start_timeout", 60.0)), 300.0)
    return TestbedOptions(k=k, defines=defines, **fields)


@dataclass(frozen=True)
class WorkerResult:
    """What one worker process reported for one size (innet or gloo)."""

    rank: int
    elements: int
    times: tuple[float, ...]
    ok: bool
    stats: dict[str, int] = field(default_factory=dict)
    """innet only: the agent's cumulative protocol counters."""
    wire: dict[str, float] | None = None
    """Mean per operation: rx/tx bytes and packets of this worker's link (None: not measured)."""
    wire_source: str | None = None
    """Where ``wire`` comes from: an interface name, or ``agent`` (its frame counters)."""


def is_failure(exc_type: type[BaseException] | None) -> bool:
    """Whether leaving with ``exc_type`` is a failure whose logs are worth keeping: an
    interrupt (Ctrl-C, or SIGTERM turned into one by the entry point) is a clean stop."""
    return exc_type is not None and not issubclass(exc_type, KeyboardInterrupt)


class Testbed:
    """A topology brought up on a backend's network, with innet switches, a controller session
    and a sum job. The single-switch star is this class itself; a system with more switches
    (``innet.testbed.rail``, ``innet.testbed.geo``) subclasses it once and says which jobs it
    installs; the backend is always the ``network`` it was given (``innet.testbed.backends``)."""

    __test__ = False  # not a pytest test class

    multi_switch = False
    """Whether the class brings up topologies of several switches (rail, geo)."""

    def __init__(self, topology: Topology, options: TestbedOptions | None, network: TestbedNetwork) -> None:
        if len(topology.switches) != 1 and not self.multi_switch:
            raise TestbedError(f"topology {topology.name}: only single-switch topologies can be brought up "
                               f"today, it has {len(topology.switches)}")
        self.topology = topology
        self.options = options or TestbedOptions()
        self.network = network
        if self.options.switch_impl == "bmv2" and self.kind != "mininet":
            raise TestbedError(f"switch_impl bmv2: the {self.kind} testbed of {topology.name} starts innet switches; "
                               "BMv2 has no UDP ports, so its switches run in Mininet (root)")
        self.procs = ProcessGroup(state_dir=self.options.state_dir)
        self.controller: Any = None
        self.job: Any = None
        self.job_hosts: dict[int, tuple[str, ...]] = {}
        """Per job id created here, its worker hosts in rank order."""
        self.grpc_addresses: dict[str, str] = {}
        """P4 switch -> its P4Runtime address (while up)."""
        self.grpc_address: str | None = None
        """The first P4 switch's P4Runtime address."""
        self.name: str | None = None
        """The testbed's name once started (``options.name`` or the first free ``tb<N>``)."""
        self.port_notes: list[str] = []
        """With ``options.fixed_ports``: one line per switch whose usual port was taken."""
        self.state: TestbedState | None = None
        """What the state file says (``innet.testbed.core.state``), while started."""
        self._started = False

    @property
    def kind(self) -> str:
        """``mininet`` or ``loopback``: the backend's."""
        return self.network.kind

    @property
    def thrift_port(self) -> int | None:
        """BMv2 only: the switch's Thrift port (registers through simple_switch_CLI)."""
        return self.network.thrift_port

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.stop(keep_logs=is_failure(exc_type) or self.options.keep_logs)

    def start(self) -> Self:
        """Network up, the controller on every P4 switch, innet.p4 pushed (in parallel: each
        switch builds its executor), forwarding installed, then the system's jobs."""
        from innet.controller.controller import Controller
        from innet.controller.pipeline import PipelineConfig
        from innet.controller.switch import SwitchEndpoint

        self.procs.open()
        try:
            (self.procs.dir / "topology.json").write_text(self.topology.to_json())
            self._announce()
            bmv2_pipeline = self.network.prepare_pipeline(self.procs)
            self.grpc_addresses = self.network.start(self.procs)
            switches = [s for s in self.topology.p4_switches if s.name in self.grpc_addresses]
            self.grpc_address = self.grpc_addresses[switches[0].name]
            impl = self.options.switch_impl
            endpoints = [SwitchEndpoint(s.name, self.grpc_addresses[s.name], s.device_id, switch_impl=impl,
                                        timeout=max(30.0, self.options.start_timeout)) for s in switches]
            if bmv2_pipeline is not None:  # BMv2 answers UNIMPLEMENTED to RegisterEntry: Thrift only
                ports = self.network.thrift_ports
                endpoints = [replace(e, thrift_port=ports[e.name], registers="thrift",
                                     thrift_cli=str(self.network.bmv2_tools.cli)) for e in endpoints]
            self.controller = Controller(endpoints).connect()
            # the config for the switches' implementation, whatever INNET_P4C names (a run may have both)
            config = bmv2_pipeline or PipelineConfig.load(self.options.program, dict(self.options.defines) or None,
                                                          switch_impl=impl)
            names = [s.name for s in switches]
            if len(names) == 1:
                self.controller.push(config)
            else:
                with ThreadPoolExecutor(len(names)) as pool:
                    list(pool.map(lambda name: self.controller.push(config, [name]), names))
            self.controller.install_forwarding(forwarding(self.topology, self.switch_port))
            self.install_jobs()
            self._record_up()
            self._started = True
        except BaseException as error:
            self.stop(keep_logs=is_failure(type(error)) or self.options.keep_logs)
            raise
        return self

    def _announce(self) -> None:
        """Choose the switches' ports (``options.fixed_ports``), then claim the name with the
        ``starting`` state file (its ports keep a concurrent bring-up off them)."""
        switches = self.topology.p4_switches
        planned: dict[str, tuple[int, int | None]] = {}
        if self.options.fixed_ports:
            avoid = claimed_ports()
            grpc = predictable_ports(P4RUNTIME_BASE, len(switches), avoid)
            bmv2 = self.options.switch_impl == "bmv2"
            thrift = predictable_ports(THRIFT_BASE, len(switches), avoid | {p for _, p in grpc}) if bmv2 else []
            for n, s in enumerate(switches):
                planned[s.name] = (grpc[n][1], thrift[n][1] if bmv2 else None)
                for what, (wanted, given) in (("P4Runtime", grpc[n]),) + ((("Thrift", thrift[n]),) if bmv2 else ()):
                    if wanted != given:
                        self.port_notes.append(f"switch {s.name}: {what} port {wanted} is taken; using {given}")
            self.network.planned_ports = planned
        starting = replace(
            new_state("-", self.kind, self.topology.name, self.procs.dir, self.options.k),
            switches=tuple(SwitchState(s.name, s.device_id, f"127.0.0.1:{planned[s.name][0]}",
                                       None if planned[s.name][1] is None else f"127.0.0.1:{planned[s.name][1]}")
                           for s in switches if s.name in planned))
        try:
            self.state = claim(starting, self.options.name)
        except TestbedStateError as error:
            raise TestbedError(str(error)) from None
        self.name = self.state.name

    def _record_up(self) -> None:
        """The state file of the started testbed: every switch's addresses, pid, log, ports."""
        assert self.state is not None
        details = self.network.switch_details()
        switches = []
        for s in self.topology.p4_switches:
            if s.name not in self.grpc_addresses:
                continue
            d = details.get(s.name)
            thrift = self.network.thrift_ports.get(s.name)
            switches.append(SwitchState(s.name, s.device_id, self.grpc_addresses[s.name],
                                        None if thrift is None else f"127.0.0.1:{thrift}",
                                        None if d is None else d.pid, None if d is None else d.log,
                                        {} if d is None else d.udp_ports, {} if d is None else d.interfaces,
                                        self.options.switch_impl))
        processes = [(r.name, r.pid, str(self.procs.log_path(r.name))) for r in self.procs.records]
        self.state = with_switches(self.state, switches, processes)
        write_state(self.state)

    def install_jobs(self) -> None:
        """The system's jobs once forwarding is in: here the ``sum`` job over every worker."""
        self.job = self.create_job()

    def stop(self, keep_logs: bool = False) -> None:
        """Close the controller, end every process, take the network down (each step even if one fails)."""
        try:
            if self.controller is not None:
                controller, self.controller = self.controller, None
                controller.close()
        finally:
            try:
                self.procs.end_spawned()
            finally:
                try:
                    self.network.stop()
                finally:
                    self.procs.close(keep_logs=keep_logs)
                    self._started = False
                    if self.state is not None:
                        state, self.state = self.state, None
                        remove_state(state)

    # -- per host -------------------------------------------------------------------------

    def spawn_on(self, host: str, name: str, argv: Sequence[str], env: dict[str, str] | None = None,
                 stdout_pipe: bool = False) -> subprocess.Popen[bytes]:
        """Start ``argv`` as a process of ``host`` (recorded in ``procs``)."""
        return self.network.spawn_on(host, name, argv, env, stdout_pipe)

    def host_transport(self, host: str) -> TransportConfig:
        """The agent transport of a worker on ``host`` towards its own switch
        (:meth:`TestbedNetwork.transport_to`)."""
        return self.network.transport_to(host, self.topology.uplink(host).b)

    def transport(self, rank: int) -> TransportConfig:
        """The agent transport of topology worker ``rank``."""
        return self.host_transport(self.topology.workers[rank].name)

    def gloo_iface(self, host: str) -> str:
        """Interface gloo binds to on ``host``."""
        return self.network.gloo_iface(host)

    def gloo_master(self) -> str:
        """Address of rank 0 for gloo's rendezvous."""
        return self.network.gloo_master()

    def switch_pid(self) -> int | None:
        """Process id of the switch (for RSS and CPU measurements); None if not running or several."""
        return self.network.switch_pid()

    def count_iface(self, host: str) -> str | None:
        """Interface (in the host's namespace) whose counters are that host's link; None on loopback."""
        return self.network.count_iface(host)

    def wire_bytes(self) -> dict[str, tuple[int, int]] | None:
        """Per host, (bytes sent, bytes received) on its link so far; None where not measurable."""
        return self.network.wire_bytes()

    def free_port(self) -> int:
        """A TCP port for gloo's rendezvous on rank 0's host."""
        return self.network.free_port()

    def switch_port(self, host: str) -> int:
        return self.topology.uplink(host).b_port

    # -- control plane --------------------------------------------------------------------

    def worker_hosts(self) -> tuple[str, ...]:
        """Every worker host of the topology, in rank order."""
        return tuple(h.name for h in sorted(self.topology.workers, key=lambda h: h.rank or 0))

    def worker_specs(self, hosts: Sequence[str] | None = None, udp_port: int | None = None) -> tuple[Any, ...]:
        """Job workers: ``hosts`` (default every worker host) get ranks 0..len-1 in that order;
        their agents listen on ``udp_port`` (default ``options.agent_port``)."""
        from innet.controller.jobs import WorkerSpec

        out = []
        for rank, name in enumerate(self.worker_hosts() if hosts is None else hosts):
            h = self.topology.host(name)
            if h not in self.topology.workers:
                raise TestbedError(f"job worker {name!r}: not a worker host of topology {self.topology.name}")
            out.append(WorkerSpec(rank=rank, port=self.switch_port(name), mac=h.mac, ip=h.address,
                                  udp_port=self.options.agent_port if udp_port is None else udp_port))
        return tuple(out)

    def create_job(self, job_id: int | None = None, mode: str = "sum", hosts: Sequence[str] | None = None,
                   **params: Any) -> Any:
        """Install a job over ``hosts`` (default every worker; rank = position) (``params``: JobSpec
        fields such as ``lr``, ``param_chunks``, ``slot_base``; ``udp_port``: the agents' port)."""
        from innet.controller.jobs import JobSpec

        hosts = self.worker_hosts() if hosts is None else tuple(hosts)
        job = JobSpec(job_id=job_id if job_id is not None else self.options.job_id,
                      workers=self.worker_specs(hosts, params.pop("udp_port", None)),
                      slot_base=params.pop("slot_base", 0),
                      slot_count=params.pop("slot_count", self.options.window), k=self.options.k, mode=mode,
                      **params)
        self.controller.create_job(job)
        self.job_hosts[job.job_id] = hosts
        return job

    def replace_job(self, mode: str = "sum", **params: Any) -> Any:
        """Destroy the current job and create another with the same id (e.g. an sgd job for training)."""
        if self.job is not None:
            self.controller.destroy_job(self.job.job_id)
            self.job = None
        self.job = self.create_job(mode=mode, **params)
        return self.job

    def counters(self) -> dict[str, int]:
        """The job's switch counters (contributions, completions, duplicates, drops) in packets."""
        node = self.controller[self.topology.switch().name]
        return {name: cells.get(self.job.job_id, 0) for name, cells in node.counters(self.job.job_id).items()}

    # -- runs -----------------------------------------------------------------------------

    def current_hosts(self) -> tuple[str, ...]:
        """Worker hosts of the current job (``self.job``), in rank order."""
        return self.job_hosts.get(self.job.job_id, self.worker_hosts())

    def attach(self) -> int:
        """A new worker set for the current job: its epoch (``Controller.attach``)."""
        return int(self.controller.attach(self.job.job_id))

    def worker_plan(self, rank: int, sizes: Sequence[int], epoch: int, repeats: int = 3, exact: bool = False,
                    chunk_deadline: float | None = None) -> WorkerPlan:
        """The plan of the current job's rank ``rank`` in the worker set attached at ``epoch``."""
        hosts = self.current_hosts()
        return WorkerPlan(job=self.job.job_id, rank=rank, num_workers=len(hosts),
                          window=self.job.slot_count, k=self.options.k, transport=self.host_transport(hosts[rank]),
                          sizes=tuple(sizes), epoch=epoch, repeats=repeats, exact=exact,
                          chunk_deadline=self.options.chunk_deadline if chunk_deadline is None else chunk_deadline,
                          count_iface=self.count_iface(hosts[rank]))

    def _collect(self, procs: list[tuple[str, subprocess.Popen[bytes]]], timeout: float,
                 what: str) -> list[list[WorkerResult]]:
        outputs = wait_outputs(self.procs, procs, timeout, what)
        return [parse_results(outputs[name].decode(errors="replace")) for name, _ in procs]

    def spawn_ina(self, sizes: Sequence[int], repeats: int = 3, exact: bool = False,
                  ranks: Sequence[int] | None = None,
                  chunk_deadline: float | None = None, tag: str = "") -> list[tuple[str, subprocess.Popen[bytes]]]:
        """Start the ``ina_worker`` of each of ``ranks`` (default all) of the current job, named
        ``ina<tag>-<host>`` (stdout piped, stderr in the log), as a new worker set (a new epoch: no
        state of an earlier set can reach it); the caller waits for them."""
        hosts = self.current_hosts()
        epoch = self.attach()
        procs = []
        for rank in range(len(hosts)) if ranks is None else ranks:
            plan = self.worker_plan(rank, sizes, epoch, repeats, exact, chunk_deadline)
            name = f"ina{tag}-{hosts[rank]}"
            argv = [sys.executable, "-m", WORKER_MODULE, plan.to_json()]
            procs.append((name, self.spawn_on(hosts[rank], name, argv, stdout_pipe=True)))
        return procs

    def run_ina(self, sizes: Sequence[int], repeats: int = 3, exact: bool = False,
                timeout: float = 300.0) -> list[list[WorkerResult]]:
        """Allreduce ``sizes`` through the switch on every worker of the current job; per rank, one
        result per size."""
        return self._collect(self.spawn_ina(sizes, repeats, exact), timeout, "innet allreduce")

    def run_gloo(self, sizes: Sequence[int], repeats: int = 3, timeout: float = 300.0,
                 master_port: int | None = None) -> list[list[WorkerResult]]:
        """gloo ring allreduce of ``sizes`` on every worker host (torch.distributed)."""
        workers = self.topology.workers
        master = self.gloo_master()
        master_port = master_port or self.free_port()
        procs = []
        for h in workers:
            argv = gloo_command(h.rank or 0, len(workers), master, master_port, sizes, repeats,
                                count_iface=self.count_iface(h.name))
            name = f"gloo-{h.name}"
            procs.append((name, self.spawn_on(h.name, name, argv, env=gloo_env(self.gloo_iface(h.name), master,
                                                                                master_port), stdout_pipe=True)))
        return self._collect(procs, timeout, "gloo allreduce")


def parse_results(text: str) -> list[WorkerResult]:
    """The JSON lines a worker (``ina_worker`` or ``gloo``) printed."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            d = json.loads(line)
            out.append(WorkerResult(int(d["rank"]), int(d["elements"]), tuple(d["times"]), bool(d["ok"]),
                                    dict(d.get("stats") or {}), d.get("wire"), d.get("wire_source")))
    return out


__all__ = ["P4_PROGRAM", "Testbed", "TestbedError", "TestbedOptions", "WorkerResult", "replace"]


def wait_outputs(group: ProcessGroup, procs: list[tuple[str, subprocess.Popen[bytes]]], timeout: float,
                 what: str, grace: float = 5.0) -> dict[str, bytes]:
    """Every process's stdout once all have exited 0; then they are stopped and forgotten.

    All are waited for at once, so the error names the process that failed *first*: when one
    worker dies, its peers fail later with timeouts that only say someone went missing. The
    others get ``grace`` seconds after the first failure to fail too (their lines are listed
    after the first's log), then are stopped."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    deadline = time.monotonic() + timeout
    outputs: dict[str, bytes] = {}
    failed: list[tuple[float, str, int]] = []
    late: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, len(procs))) as pool:
        futures = {pool.submit(_communicate, popen, timeout + grace + 60): (name, popen) for name, popen in procs}
        try:
            pending = set(futures)
            while pending:
                limit = deadline if not failed else min(deadline, failed[0][0] + grace)
                done, pending = wait(pending, timeout=max(0.0, limit - time.monotonic()),
                                     return_when=FIRST_COMPLETED)
                if not done:
                    late += [futures[f][0] for f in pending]
                    break
                for future in done:
                    name, popen = futures[future]
                    output = future.result()
                    if output is None:  # still running after its stop: reported as late
                        late.append(name)
                        continue
                    outputs[name] = output
                    if popen.returncode != 0:
                        failed.append((time.monotonic(), name, popen.returncode))
        finally:
            for name, _ in procs:
                group.stop(name)
    try:
        if failed:
            _, name, code = failed[0]
            lines = [f"{what}: {name} exited with status {code}; its log:", group.log_tail(name)]
            stdout = outputs[name].decode(errors="replace")[-2000:].strip()
            lines += [stdout] if stdout else []
            lines += [f"then {other} exited with status {rc}: {group.log_tail(other, 1)}"
                      for _, other, rc in failed[1:]]
            raise TestbedError("\n".join(lines))
        if late:
            raise TestbedError(f"{what}: {', '.join(late)} did not finish within {timeout:g} s; "
                               f"the log of {late[0]}:\n{group.log_tail(late[0])}")
    finally:
        for name, _ in procs:
            group.forget(name)
    return outputs


def _communicate(popen: subprocess.Popen[bytes], timeout: float) -> bytes | None:
    try:
        return popen.communicate(timeout=timeout)[0] or b""
    except subprocess.TimeoutExpired:
        return None
