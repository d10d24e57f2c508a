"""A program under packet fuzzing: its pipeline with the control plane installed, seed
packets, a cheap state reset between examples, and reproducers in STF form.

Why STF: a failing example is written as an STF file (the control-plane lines the
harness applied, then the example's packets), so ``innet-stf <program> <file>``
replays it outside the fuzzer.
"""

from __future__ import annotations

import hashlib
import traceback
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

from fuzzlib import REPO, Hang, count, save_reproducer, watchdog

from innet.switch.pipeline import Pipeline
from innet.switch.stf import apply_control, parse_stf

PACKET_DEADLINE_S = 5.0
"""One packet taking this long is reported as a hang (they take microseconds)."""
DROP_PORT = 511

INNET_P4 = REPO / "p4" / "innet.p4"
EXAMPLES = sorted((REPO / "p4" / "examples").glob("*.p4"))
PROGRAMS = [INNET_P4, *EXAMPLES]

SWITCH_MAC, SWITCH_IP = 0x000000000100, 0x0A0000FE


@dataclass(frozen=True)
class InnetJob:
    """One job of the innet.p4 control plane installed for fuzzing (``set_job`` data)."""

    job: int
    mode: int
    num_workers: int
    slot_base: int
    slot_count: int
    param_base: int = 0
    param_chunks: int = 0
    lr: int = 0
    lr_shift: int = 0
    beta: int = 0
    beta_shift: int = 0
    mcast_grp: int = 1
    epoch: int = 2
    """The attached worker set's epoch; contributions of other epochs are answered STALE."""


INNET_JOBS = (
    InnetJob(1, 0, 2, 0, 8),
    InnetJob(2, 1, 2, 8, 8, param_base=5, param_chunks=4, lr=1),
    InnetJob(3, 2, 3, 16, 4, param_base=16, param_chunks=8, lr=5, lr_shift=3, beta=7, beta_shift=3),
    InnetJob(4, 0, 32, 20, 2, mcast_grp=2),
    InnetJob(15, 1, 1, 22, 2, param_base=30, param_chunks=2, lr=0xFFFFFFFD, lr_shift=1, mcast_grp=3),
)
"""Sum, sgd, momentum, a full 32-worker bitmap and the highest job id; disjoint slot and
parameter ranges (as the controller allocates them)."""


@dataclass(frozen=True)
class InnetOwner:
    """An ``innet_owners`` entry: chunks ``prefix/prefix_len`` of ``job`` belong to ``rank``."""

    job: int
    prefix: int
    prefix_len: int
    rank: int
    mcast_grp: int

    def owns(self, job: int, chunk: int) -> bool:
        shift = 32 - self.prefix_len
        return job == self.job and chunk >> shift == self.prefix >> shift


INNET_OWNERS = (
    InnetOwner(1, 0, 30, 3, 4),
    InnetOwner(1, 4, 30, 4, 5),
    InnetOwner(3, 0, 28, 5, 6),
)
"""Job 1 (sum, 2 workers): rank 3 owns chunks 0..3, rank 4 chunks 4..7 (REDUCE/BCAST copies
of 3 members, multicast to the workers and the owner); job 3 (momentum) has an owner too,
whose REDUCE/BCAST the switch drops (sum jobs only). Owner ranks are outside group 1 (jobs
1..3 share it, rids 0..2), as the controller keeps them out of a job's own group."""


def owner_of(job: int, chunk: int) -> InnetOwner | None:
    return next((o for o in INNET_OWNERS if o.owns(job, chunk)), None)


def worker_port(w: int) -> int:
    return w + 1


def worker_mac(w: int) -> int:
    return 0xA001 + w


def worker_ip(w: int) -> int:
    return 0x0A000001 + w


def worker_udp(w: int) -> int:
    return 0x1001 + w


def innet_control() -> str:
    """innet.p4's control plane as the controller sets it up, in STF form."""
    lines = [f"setdefault switch_addr set_switch_addr(mac:{SWITCH_MAC:#x}, ip:{SWITCH_IP:#x})"]
    groups: dict[int, int] = {}
    for j in INNET_JOBS:
        lines.append(
            f"add innet_jobs hdr.innet.job:{j.job} set_job(mode:{j.mode}, num_workers:{j.num_workers}, "
            f"mcast_grp:{j.mcast_grp}, slot_base:{j.slot_base}, slot_count:{j.slot_count}, "
            f"param_base:{j.param_base}, param_chunks:{j.param_chunks}, lr:{j.lr:#x}, "
            f"lr_shift:{j.lr_shift}, beta:{j.beta:#x}, beta_shift:{j.beta_shift}, epoch:{j.epoch})")
        for w in range(j.num_workers):
            lines.append(f"add innet_workers hdr.innet.job:{j.job} standard_metadata.egress_rid:{w} "
                         f"set_worker(mac:{worker_mac(w):#x}, ip:{worker_ip(w):#x}, udp_port:{worker_udp(w):#x})")
        groups[j.mcast_grp] = max(groups.get(j.mcast_grp, 0), j.num_workers)
    jobs = {j.job: j for j in INNET_JOBS}
    members: dict[int, list[int]] = {grp: list(range(n)) for grp, n in groups.items()}
    for o in INNET_OWNERS:
        lines.append(f"add innet_owners hdr.innet.job:{o.job} hdr.innet.chunk:{o.prefix:#x}/{o.prefix_len} "
                     f"set_owner(rank:{o.rank}, mcast_grp:{o.mcast_grp})")
        if jobs[o.job].mode == 0:  # the others' REDUCE/BCAST are dropped: no group needed
            members[o.mcast_grp] = list(range(jobs[o.job].num_workers)) + [o.rank]
            lines.append(f"add innet_workers hdr.innet.job:{o.job} standard_metadata.egress_rid:{o.rank} "
                         f"set_worker(mac:{worker_mac(o.rank):#x}, ip:{worker_ip(o.rank):#x}, "
                         f"udp_port:{worker_udp(o.rank):#x})")
    handle = 0
    for grp, ranks in sorted(members.items()):
        lines.append(f"mc_mgrp_create {grp}")
        for w in ranks:
            lines.append(f"mc_node_create {w} {worker_port(w)}")
            lines.append(f"mc_node_associate {grp} {handle}")
            handle += 1
    for w in range(4):  # routes and ARP entries for a few workers
        lines.append(f"add ipv4_lpm hdr.ipv4.dstAddr:{worker_ip(w):#x}/32 "
                     f"ipv4_forward(mac:{worker_mac(w):#x}, port:{worker_port(w)})")
        lines.append(f"add arp_responder hdr.arp.targetIp:{worker_ip(w):#x} arp_reply(mac:{worker_mac(w):#x})")
    lines.append("add ipv4_lpm hdr.ipv4.dstAddr:0x0b000000/8 ipv4_forward(mac:0xbb, port:500)")
    lines.append(f"register_write MyIngress.innet_param_0 5 1000")
    lines.append(f"register_write MyIngress.innet_param_63 17 0xfffffc18")
    return "\n".join(lines) + "\n"


@dataclass
class Harness:
    """One program loaded for fuzzing (see module docstring)."""

    name: str
    path: Path
    pipeline: Pipeline
    control: str
    """The control plane applied, as STF lines."""
    seeds: list[tuple[int, bytes]]
    snapshot: dict[str, list[int]] = field(default_factory=dict)
    counters: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)

    def take_snapshot(self) -> None:
        self.snapshot = {n: list(r.cells) for n, r in self.pipeline.registers.items()}
        self.counters = {n: (list(c.packets), list(c.bytes)) for n, c in self.pipeline.counters.items()}

    def reset(self) -> None:
        """Back to the state right after the control plane was applied (changed cells only)."""
        for name, reg in self.pipeline.registers.items():
            snap = self.snapshot[name]
            if reg.cells != snap:
                reg.cells[:] = snap
        for name, c in self.pipeline.counters.items():
            packets, nbytes = self.counters[name]
            if c.packets != packets:
                c.packets[:] = packets
                c.bytes[:] = nbytes
        self.pipeline.pop_digests()

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet; any exception, a hang or an output port out of range raises
        ``Problem``."""
        count("packets")
        try:
            with watchdog(PACKET_DEADLINE_S, f"{self.name}: packet from port {port}"):
                outputs = self.pipeline.process(port, data)
        except (Exception, Hang) as error:
            raise Problem(f"{type(error).__name__}: {error}", traceback.format_exc()) from None
        for oport, odata in outputs:
            if not (isinstance(oport, int) and 0 <= oport < DROP_PORT) or not isinstance(odata, bytes):
                raise Problem(f"output to port {oport!r} (must be 0..510) of {type(odata).__name__}")
        return outputs

    def check(self, packets: list[tuple[int, bytes]], checker: Checker | None = None) -> None:
        """Run ``packets`` from the reset state (``checker`` may raise ``Problem`` after
        each packet); on a problem, fail with a minimized STF reproducer."""
        problem = self._first_problem(packets, checker)
        if problem is None:
            return
        failing = packets[:problem[0] + 1]
        # greedy minimization: drop every packet whose removal keeps the sequence failing
        i = 0
        while i < len(failing) - 1 and len(failing) <= 64:
            trial = failing[:i] + failing[i + 1:]
            found = self._first_problem(trial, checker)
            if found is not None and found[0] == len(trial) - 1:
                failing = trial
            else:
                i += 1
        _, error = self._first_problem(failing, checker) or problem
        path = self.reproducer(str(error), failing)
        raise AssertionError(
            f"{self.name}: {error}\nminimized reproducer ({len(failing)} of {len(packets)} packets; replay with "
            f"`innet-stf {self.path.relative_to(REPO)} {path}`): {path}\n"
            f"last packet: port {failing[-1][0]} {failing[-1][1].hex()}\n{error.detail}")

    def _first_problem(self, packets: list[tuple[int, bytes]], checker: Checker | None
                       ) -> tuple[int, Problem] | None:
        self.reset()
        if checker is not None:
            checker.start()
        for i, (port, data) in enumerate(packets):
            try:
                if checker is None:
                    self.process(port, data)
                else:
                    checker(self, port, data, lambda: self.process(port, data))
            except Problem as problem:
                return i, problem
        return None

    def reproducer(self, problem: str, history: list[tuple[int, bytes]]) -> Path:
        body = "".join(f"packet {p} {d.hex()}\n" for p, d in history)
        text = (f"# fuzz reproducer for {self.path.relative_to(REPO)}: {problem.splitlines()[0]}\n"
                f"# control plane as installed by the fuzz harness, then the example's packets\n"
                f"{self.control}{body}")
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        return save_reproducer("packets", f"{self.name}-{digest}.stf", text)


class Problem(Exception):
    """A property violated by one packet (message, and a traceback when one was raised)."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class Checker:
    """Properties checked around each packet of a sequence."""

    def start(self) -> None:
        """A sequence starts from the reset state (models reset here)."""

    def __call__(self, h: Harness, port: int, data: bytes, run: Callable[[], list[tuple[int, bytes]]]) -> None:
        """Look at the state, call ``run()`` (returns the outputs), check; raise ``Problem``."""
        run()


def _stf_setup(path: Path) -> tuple[str, list[tuple[int, bytes]]]:
    """The control-plane lines and the packets of the program's own STF test."""
    stf = path.with_suffix(".stf")
    if not stf.is_file():
        return "", []
    text = stf.read_text()
    test = parse_stf(text, str(stf))
    keep = {line for line, _, _ in test.control}
    control = "".join(raw + "\n" for n, raw in enumerate(text.splitlines(), 1) if n in keep)
    return control, [(port, data) for _, port, data in test.packets]


@lru_cache(maxsize=None)
def harness(path: Path) -> Harness:
    """The program at ``path`` loaded with its control plane (cached per session)."""
    pipeline = Pipeline.from_file(path, seed=0)
    if path == INNET_P4:
        control = innet_control()
        _, seeds = _stf_setup(path)
    else:
        control, seeds = _stf_setup(path)
    for lineno, cmd, args in parse_stf(control, f"{path.stem} control").control:
        apply_control(pipeline, cmd, args)
    h = Harness(path.stem, path, pipeline, control, seeds or [(1, bytes(64))])
    h.take_snapshot()
    return h
