"""PyTorch training runs on a testbed: LuWu mode with optimizer nodes, DDP with innet's hook,
DDP with gloo, FSDP2 over gloo, and the one-process reference (``innet.testbed.luwu.train``).

    topo = luwu_star(workers=2, nodes=1)            # h1..hN workers, then the nodes' hosts
    with open_testbed(topo, backend="loopback") as tb:
        luwu = run_training(tb, RunConfig(mode="luwu", workers=2, nodes=1), state_root)
        ddp = run_training(tb, RunConfig(mode="ddp-innet", workers=2))

The optimizer nodes are hosts of the star like the workers (a switch port each, an
``innet_workers`` entry); the LuWu job is a sum job over the workers whose chunks the nodes
own (REDUCE/BCAST, ``innet.host.luwu.plan``), the DDP job one over the workers only.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from innet.host.agent.transport import UdpTransportConfig
from innet.testbed.core.testbed import Testbed, TestbedError
from innet.testbed.luwu.records import TrainerFinal
from innet.testbed.luwu.status import NodeStatus, UnreadNodeStatus
from innet.testbed.luwu.train import DISTRIBUTED, MODES, MODULE as TRAIN_MODULE, TrainSpec, build_model
from innet.testbed.core.topology import Link, Topology, star
from innet.polling import PollTimeout, poll_until



def luwu_star(workers: int, nodes: int = 1, link: Link | None = None) -> Topology:
    """A star of ``workers + nodes`` hosts: ``h1..hN`` are the workers, the rest optimizer nodes
    (``link``: every host link's shaping, Mininet)."""
    return star(workers + nodes, link=link)


@dataclass(frozen=True)
class RunConfig:
    mode: str
    workers: int = 2
    nodes: int = 1
    steps: int = 60
    batch: int = 32
    lr: float = 0.003
    hidden: tuple[int, ...] = (128, 64)
    data: str = "digits"
    """``digits`` or ``synthetic`` (``innet.testbed.luwu.data``)."""
    inputs: int = 64
    warmup: int = 2
    """Steps before the workers start counting their link's bytes."""
    overlap: bool = True
    chunk_deadline: float = 20.0
    timeout: float = 300.0
    kill_node_at_step: int | None = None
    """Kill optimizer node 0 once its status shows this step (failure test)."""
    duplex: bool | None = None
    """LuWu's pulls on a second job, beside the pushes (``LuwuPlan.pull_job``); None: where
    the hosts' agents have addresses of their own (Mininet). Loopback's frame tunnels answer
    one sender per switch port, so a host there has one agent per job set."""
    in_flight_bytes: int | None = None
    """Payload bytes in flight per agent of the ``ddp-innet`` hook and of a duplex LuWu plan;
    0: the job's whole window; None: ``IN_FLIGHT_BYTES`` where the hosts' agents have addresses
    of their own (Mininet's shaped links, where a deeper window only queues in front of the
    link), else the window (a duplex plan: always the cap)."""


@dataclass
class RunResult:
    mode: str
    losses: list[list[float]] = field(default_factory=list)
    """Per rank, the loss of every step."""
    finals: list[TrainerFinal] = field(default_factory=list)
    """The final report of every trainer that printed one."""
    nodes: list[NodeStatus | UnreadNodeStatus] = field(default_factory=list)
    """The optimizer nodes' final status, in plan order (unread: why)."""
    seconds: float = 0.0
    errors: dict[str, str] = field(default_factory=dict)
    """Process name -> its stderr tail, for processes that failed."""
    killed_at: float | None = None
    """``time.monotonic()`` when optimizer node 0 was killed (``kill_node_at_step``)."""
    duplex: bool = False
    """LuWu ran a duplex plan (pulls on a second job)."""
    failed_at: dict[str, float] = field(default_factory=dict)
    """Training process name -> ``time.monotonic()`` when it caught its error (the clock is
    the machine's, the same in every process and Mininet host)."""

    @property
    def mean_loss(self) -> list[float]:
        return [float(x) for x in np.mean(np.array(self.losses), axis=0)]


PIECE_BYTES = 1 << 20
"""A duplex plan's segment pieces: about 1 MiB, so a pull trails its push by ~80 ms at 100 Mbit/s."""


IN_FLIGHT_BYTES = 64 << 10
"""Payload in flight per agent of a duplex plan and of the DDP hook on Mininet: 64 KiB (8 jumbo
frames, ~5 ms at 100 Mbit/s). Deeper windows only queue in front of a shaped link, and the
chunks stuck there are sent again: 128 KiB cost LuWu 5-7% more bytes than 2 x 4P, 64 KiB
1-2% (docs/benchmarks.md, "LuWu and the DDP hook")."""


def _chunks_in_flight(in_flight_bytes: int, k: int) -> int:
    """``Timing.max_outstanding`` for a payload cap (0: none); at least 8 chunks."""
    return max(8, in_flight_bytes // (4 * k)) if in_flight_bytes else 0


def _has_udp_agents(tb: Testbed, host: str) -> bool:
    return isinstance(tb.host_transport(host), UdpTransportConfig)


def _pull_transport(tb: Testbed, host: str) -> UdpTransportConfig:
    """The transport of ``host``'s second agent (a duplex plan's pulls): the next UDP port."""
    transport = tb.host_transport(host)
    if not isinstance(transport, UdpTransportConfig):
        raise TestbedError(f"luwu run: a duplex plan's second agent needs a UDP agent on {host}, "
                           f"the testbed gives {type(transport).__name__}")
    return replace(transport, local_port=tb.options.agent_port + 1)


def _spawn(tb: Testbed, host: str, name: str, argv: list[str], gloo: bool = False) -> Any:
    """Start ``argv`` on ``host``; gloo ranks bind to the host's testbed interface (in Mininet the
    hosts share the machine's hostname, which gloo would otherwise resolve)."""
    env = {"OMP_NUM_THREADS": "1", **({"GLOO_SOCKET_IFNAME": tb.gloo_iface(host)} if gloo else {})}
    return tb.spawn_on(host, name, argv, env=env, stdout_pipe=True)


def _kill_at_step(tb: Testbed, name: str, directory: Path, step: int, timeout: float) -> float:
    """Kill ``name`` once its status shows ``step``; when (``time.monotonic()``)."""
    def reached() -> bool:
        try:
            return NodeStatus.read(directory).step >= step
        except ValueError:  # not written yet
            return False

    try:
        poll_until(reached, timeout, what=f"luwu run: optimizer node {name} at step {step}")
    except PollTimeout as error:
        raise TestbedError(str(error)) from None
    tb.procs.stop(name)
    return time.monotonic()


def run_training(tb: Testbed, config: RunConfig, state_root: Path | None = None) -> RunResult:
    """Run ``config.mode`` on ``tb`` (the star of :func:`luwu_star`); per rank losses and finals."""
    from innet.host.luwu.plan import LuwuPlan
    from innet.host.luwu.ooc_adam import AdamConfig
    from innet.host.luwu.node import NodeConfig
    from innet.host.luwu.model_in_network import flat_parameters, layer_table

    hosts = tb.worker_hosts()
    n, s = config.workers, config.nodes
    if len(hosts) < n + (s if config.mode == "luwu" else 0):
        raise TestbedError(f"luwu run: the topology has {len(hosts)} hosts, {config.mode} needs "
                           f"{n} workers{f' + {s} nodes' if config.mode == 'luwu' else ''}")
    base = TrainSpec(mode=config.mode, world=n, steps=config.steps, batch=config.batch, lr=config.lr,
                     hidden=config.hidden, overlap=config.overlap, chunk_deadline=config.chunk_deadline,
                     k=tb.options.k, data=config.data, inputs=config.inputs, warmup=config.warmup)
    result = RunResult(config.mode)
    procs: list[tuple[str, Any]] = []
    node_dirs: list[Path] = []
    pull_job_id: int | None = None
    start = time.perf_counter()
    if config.mode == "local":
        procs.append(("train-local", _spawn(tb, hosts[0], "train-local",
                                            [sys.executable, "-m", TRAIN_MODULE, replace(base, rank=0).to_json()])))
    elif config.mode in DISTRIBUTED:
        job = tb.replace_job(mode="sum", hosts=hosts[:n])
        epoch = tb.controller.attach(job.job_id)
        port = tb.free_port()
        in_flight = config.in_flight_bytes
        if in_flight is None:
            in_flight = IN_FLIGHT_BYTES if _has_udp_agents(tb, hosts[0]) else 0
        outstanding = _chunks_in_flight(in_flight, tb.options.k) if config.mode == "ddp-innet" else 0
        for r in range(n):
            spec = replace(base, rank=r, job=job.job_id, window=job.slot_count, epoch=epoch, outstanding=outstanding,
                           transport=tb.host_transport(hosts[r]), master=(tb.gloo_master(), port),
                           count_iface=tb.count_iface(hosts[r]))
            name = f"train-{hosts[r]}"
            procs.append((name, _spawn(tb, hosts[r], name, [sys.executable, "-m", TRAIN_MODULE, spec.to_json()],
                                       gloo=True)))
    elif config.mode == "luwu":
        from innet.controller.jobs import OwnerSpec

        if tb.options.switch_impl == "bmv2":
            from innet.testbed.backends.bmv2 import Bmv2Error, check_growth

            try:
                check_growth(tb.options.k)
            except Bmv2Error as error:
                raise TestbedError(f"luwu run: {error}") from None
        members = hosts[:n + s]
        model = build_model(base)
        duplex = config.duplex if config.duplex is not None else _has_udp_agents(tb, members[0])
        if duplex and not _has_udp_agents(tb, members[0]):
            raise TestbedError("luwu run: duplex needs agents with addresses of their own (Mininet); this "
                               "testbed's frame tunnels answer one sender per switch port")
        plan = LuwuPlan(job=tb.options.job_id, num_workers=n, nodes=tuple(f"o{i + 1}" for i in range(s)),
                        layer_sizes=tuple(layer.size for layer in layer_table(model)),
                        layer_names=tuple(layer.name for layer in layer_table(model)),
                        epoch=1, window=tb.options.window, k=tb.options.k,
                        piece=max(2, PIECE_BYTES // (4 * tb.options.k)) if duplex else 0,
                        outstanding=_chunks_in_flight(IN_FLIGHT_BYTES if config.in_flight_bytes is None
                                                      else config.in_flight_bytes, tb.options.k) if duplex else 0)
        specs = tb.worker_specs(members)
        owners = tuple(OwnerSpec(specs[o.rank], o.first_chunk, o.chunks) for o in plan.owner_ranges())
        job = tb.replace_job(mode="sum", hosts=hosts[:n], owners=owners)
        plan = replace(plan, job=job.job_id, window=job.slot_count, epoch=tb.controller.attach(job.job_id))
        if duplex:
            pull_specs = tb.worker_specs(members, udp_port=tb.options.agent_port + 1)
            pull_owners = tuple(OwnerSpec(pull_specs[o.rank], o.first_chunk, o.chunks) for o in plan.owner_ranges())
            pull_job = tb.create_job(job_id=job.job_id + 1, mode="sum", hosts=hosts[:n], owners=pull_owners,
                                     slot_base=job.slot_base + job.slot_count, slot_count=job.slot_count,
                                     udp_port=tb.options.agent_port + 1)
            pull_job_id = pull_job.job_id
            plan = replace(plan, pull_job=pull_job_id, pull_epoch=tb.controller.attach(pull_job_id))
            result.duplex = True
        root = Path(state_root) if state_root is not None else Path(tempfile.mkdtemp(prefix="innet-luwu-"))
        root.mkdir(parents=True, exist_ok=True)
        init = root / "init.npy"
        np.save(init, flat_parameters(model))
        for i in range(s):
            host = members[n + i]
            node_dirs.append(root / plan.nodes[i])
            nc = NodeConfig(plan, i, str(node_dirs[-1]), tb.host_transport(host), config.steps,
                            AdamConfig(lr=config.lr), str(init),
                            pull_transport=_pull_transport(tb, host) if plan.duplex else None)
            name = f"node-{plan.nodes[i]}"
            procs.append((name, _spawn(tb, host, name, [sys.executable, "-m", NodeConfig.__module__, nc.to_json()])))
        for r in range(n):
            spec = replace(base, rank=r, job=job.job_id, window=job.slot_count, epoch=plan.epoch,
                           transport=tb.host_transport(hosts[r]), plan=plan,
                           count_iface=tb.count_iface(hosts[r]),
                           pull_transport=_pull_transport(tb, hosts[r]) if plan.duplex else None)
            name = f"train-{hosts[r]}"
            procs.append((name, _spawn(tb, hosts[r], name, [sys.executable, "-m", TRAIN_MODULE, spec.to_json()])))
    else:
        raise TestbedError(f"luwu run: mode {config.mode!r} is not one of {', '.join(MODES)}")
    try:
        if config.kill_node_at_step is not None:
            result.killed_at = _kill_at_step(tb, procs[0][0], node_dirs[0], config.kill_node_at_step,
                                             config.timeout)
        deadline = time.monotonic() + config.timeout
        for name, popen in procs:
            try:
                out, _ = popen.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except Exception:
                raise TestbedError(f"luwu run: {name} did not finish within {config.timeout:g} s; log:\n"
                                   f"{tb.procs.log_tail(name)}") from None
            if popen.returncode != 0:
                result.errors[name] = tb.procs.log_tail(name)
            if name.startswith("train-"):
                lines = [json.loads(l) for l in out.decode(errors="replace").splitlines() if l.startswith("{")]
                result.losses.append([d["loss"] for d in lines if "step" in d])
                try:
                    result.finals += [TrainerFinal.from_json(d) for d in lines if d.get("final")]
                except ValueError as error:
                    result.errors[name] = str(error)
                result.failed_at.update({name: d["monotonic"] for d in lines if "failed" in d})
    finally:
        for name, _ in procs:
            tb.procs.stop(name)
            tb.procs.forget(name)
        if pull_job_id is not None:
            tb.controller.destroy_job(pull_job_id)
    for d in node_dirs:
        try:
            result.nodes.append(NodeStatus.read(d))
        except ValueError as error:
            result.nodes.append(UnreadNodeStatus(str(error)))
    result.seconds = time.perf_counter() - start
    return result
