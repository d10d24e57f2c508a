"""Test setup for p4/innet.p4 on loopback: the switch's UDP ports and a minimal controller.

``InnetTestSwitch`` runs innet.p4 on innet's executor behind ``innet.switch.ports`` UDP
ports (the port machinery of ``innet-switch -u``, optionally lossy) in this process, and
configures it through the in-process ``Pipeline`` API (what ``innet.controller`` will do
over P4Runtime): switch address, ``innet_jobs``, multicast groups, ``innet_workers``, and
initial parameters. Each worker gets its own switch port and talks to it with the frame
tunnel transport, from its agent process.

    with InnetTestSwitch(num_ports=4) as switch:
        configs = switch.add_job(1, num_workers=4, window=16)
        ...  # Agent(config) per worker
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from innet import wire
from innet.host.agent.agent import AgentConfig
from innet.wire.owners import OwnerRange, owner_group, prefixes
from innet.host.agent.aggregator import JobConfig, Timing
from innet.wire.quantize import FixedPointFormat, OptimizerParams
from innet.host.agent.transport import TunnelTransportConfig
from innet.switch.pipeline import KeySpec, Pipeline
from innet.switch.ports import LossSpec, PortSet, UdpPort, UdpPortSpec

REPO = Path(__file__).resolve().parents[2]
P4_SOURCE = REPO / "p4" / "innet.p4"
SWITCH = wire.Endpoint("02:00:00:00:00:fe", "10.0.0.254")
COUNTERS = ("contributions", "completions", "duplicates", "drops")


@functools.lru_cache(maxsize=4)
def _program(defines: tuple[tuple[str, str], ...]) -> Any:
    from innet.switch.frontend import compile_file  # type: ignore[attr-defined]

    return compile_file(str(P4_SOURCE), include_dirs=(str(P4_SOURCE.parent),),
                        defines=dict(defines) or None)


def _mac(mac: str) -> int:
    return int.from_bytes(wire.mac_bytes(mac), "big")


def _ip(ip: str) -> int:
    return int.from_bytes(wire.ip_bytes(ip), "big")


@dataclass(frozen=True)
class JobSetup:
    """What ``add_job`` installed."""

    job: int
    num_workers: int
    slot_base: int
    window: int
    param_base: int
    param_chunks: int
    ports: tuple[int, ...]
    endpoints: tuple[wire.Endpoint, ...]


class InnetTestSwitch:
    """innet.p4 on UDP switch ports 1..num_ports with an in-process control plane."""

    def __init__(self, num_ports: int, loss: LossSpec | None = None, k: int = wire.DEFAULT_K,
                 slots: int = 1024, param_chunks: int = 4096) -> None:
        defines = {"INNET_K": str(k), "INNET_SLOTS": str(slots), "INNET_PARAM_CHUNKS": str(param_chunks)}
        self.k = k
        self.slots = slots
        self.param_capacity = param_chunks
        self.pipeline = Pipeline(_program(tuple(sorted(defines.items()))))
        self.ports = [UdpPort(UdpPortSpec.parse(f"{p}@127.0.0.1:0"), loss)
                      for p in range(1, num_ports + 1)]
        self.portset = PortSet(self.ports, self.pipeline.process)
        self.jobs: dict[int, JobSetup] = {}
        self._next_slot = 0
        self._next_param = 0
        self.pipeline.table_set_default("switch_addr", "set_switch_addr",
                                        [_mac(SWITCH.mac), _ip(SWITCH.ip)])

    def __enter__(self) -> "InnetTestSwitch":
        self.portset.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.portset.close()

    def tunnel(self, port: int) -> tuple[str, int]:
        """UDP address of switch port ``port``."""
        return self.ports[port - 1].address

    def add_job(self, job: int, num_workers: int, window: int = 16,
                mode: wire.Mode = wire.Mode.SUM, ports: list[int] | None = None,
                params: npt.ArrayLike | None = None, opt: OptimizerParams | None = None,
                fixed: FixedPointFormat | None = None, timing: Timing | None = None,
                owners: tuple[OwnerRange, ...] = (), owner_slots: int = 0
                ) -> list[AgentConfig]:
        """Install job ``job`` and return one frame-tunnel AgentConfig per worker rank, then
        one per owner (``owners``: ranks ``num_workers..``, in order, on the ports after the
        workers'; their ``innet_owners`` entries, workers entries and groups as the
        controller installs them)."""
        members = num_workers + len(owners)
        ports = list(range(1, members + 1)) if ports is None else ports
        assert len(ports) == members and [o.rank for o in owners] == list(range(num_workers, members))
        opt = opt or OptimizerParams(0, 0)
        flat = np.zeros(0, np.int32) if params is None else np.asarray(params, np.int32).ravel()
        chunks = -(-flat.size // self.k)
        setup = JobSetup(job, num_workers, self._next_slot, window, self._next_param, chunks,
                         tuple(ports), tuple(wire.Endpoint(f"02:00:00:00:{job:02x}:{r + 1:02x}",
                                                           f"10.{job}.0.{r + 1}", 40000 + r)
                                             for r in range(members)))
        if setup.slot_base + window > self.slots or setup.param_base + chunks > self.param_capacity:
            raise ValueError(f"job {job}: out of slots or parameter chunks")
        self._next_slot += window
        self._next_param += chunks
        group = job + 1
        with self.pipeline.atomic() as p:
            p.table_insert("innet_jobs", [KeySpec(job)], "set_job", dict(
                mode=int(mode), num_workers=num_workers, mcast_grp=group,
                slot_base=setup.slot_base, slot_count=window, param_base=setup.param_base,
                param_chunks=chunks, lr=opt.lr, lr_shift=opt.lr_shift, beta=opt.beta,
                beta_shift=opt.beta_shift, epoch=1))
            p.mc_set_group(group, [(rank, port) for rank, port in enumerate(ports[:num_workers])])
            for o in owners:
                members_of = [(rank, port) for rank, port in enumerate(ports[:num_workers])]
                p.mc_set_group(owner_group(job, o.rank), members_of + [(o.rank, ports[o.rank])])
                for prefix, length in prefixes(o.first_chunk, o.chunks):
                    p.table_insert("innet_owners", [KeySpec(job), KeySpec(prefix, prefix_len=length)], "set_owner",
                                   dict(rank=o.rank, mcast_grp=owner_group(job, o.rank)))
            for rank, ep in enumerate(setup.endpoints):
                p.table_insert("innet_workers", [KeySpec(job), KeySpec(rank)], "set_worker",
                               [_mac(ep.mac), _ip(ep.ip), ep.port])
            if flat.size:
                padded = np.zeros(chunks * self.k, np.int64)
                padded[:flat.size] = flat
                cells = (padded & 0xFFFFFFFF).reshape(chunks, self.k)
                for i in range(self.k):
                    for c in range(chunks):
                        p.register_write(f"innet_param_{i}", setup.param_base + c, int(cells[c, i]))
        self.jobs[job] = setup
        timing = timing or Timing(initial_rto=0.05, chunk_deadline=15.0)
        return [AgentConfig(JobConfig(job, rank, num_workers, window, self.k, epoch=1, owners=owners,
                                      owner_slots=owner_slots),
                            TunnelTransportConfig(self.tunnel(port), setup.endpoints[rank], SWITCH),
                            mode, fixed, timing=timing)
                for rank, port in enumerate(ports)]

    def read_params(self, job: int, size: int) -> npt.NDArray[np.int32]:
        """The job's stored parameters (first ``size`` values) as int32."""
        setup = self.jobs[job]
        table = np.zeros((setup.param_chunks, self.k), np.int64)
        for i in range(self.k):
            cells = self.pipeline.register_read(f"innet_param_{i}")
            assert isinstance(cells, list)
            table[:, i] = cells[setup.param_base:setup.param_base + setup.param_chunks]
        return table.ravel()[:size].astype(np.uint32).view(np.int32)

    def counters(self, job: int) -> dict[str, int]:
        """Packet counts of the job's counters."""
        return {name: self.pipeline.counter_read(f"innet_{name}", job)[0] for name in COUNTERS}
