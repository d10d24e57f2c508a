"""innet's domain data: the pipeline layout read from the P4Info, jobs, workers,
forwarding and the table entries / register cells they turn into (docs/PROTOCOL.md).

Pure functions of values: nothing here talks to a switch (see :mod:`.innet_switch`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

from innet.controller.entities import Lpm, Match, Replica, TableEntry
from innet.controller.errors import JobError, SchemaError
from innet.controller.schema import P4Schema, parse_value, to_signed
from innet.wire.owners import OWNER_GROUP_BASE, OwnerRange, OwnersError, check_owners, owner_group, prefixes
from innet.wire.quantize import QuantizeError, optimizer_params
from innet.wire import MAX_WORKERS, Mode

JOBS_TABLE = "MyIngress.innet_jobs"
WORKERS_TABLE = "MyEgress.innet_workers"
LPM_TABLE = "MyIngress.ipv4_lpm"
ARP_TABLE = "MyIngress.arp_responder"
ADDR_TABLE = "MyIngress.switch_addr"
OWNERS_TABLE = "MyIngress.innet_owners"
COUNTERS = ("innet_contributions", "innet_completions", "innet_duplicates", "innet_drops", "innet_stale")
"""Per-job packet counters (short names)."""
SET_JOB_PARAMS = ("mode", "num_workers", "mcast_grp", "slot_base", "slot_count", "param_base",
                  "param_chunks", "lr", "lr_shift", "beta", "beta_shift", "epoch")
MAX_EPOCH = 0xFFFFFFFF
"""Epochs are bit<32>; 0 means no worker set attached (every CONTRIB is answered STALE)."""


@dataclass(frozen=True)
class InnetLayout:
    """Sizes and register names of an innet.p4 build, read from its P4Info."""

    k: int
    """Values per packet (INNET_K): the number of ``innet_acc_<i>`` registers."""
    slots: int
    """Aggregation slots (INNET_SLOTS); each has two copies."""
    param_chunks: int
    """Chunks of stored parameters (INNET_PARAM_CHUNKS)."""
    max_jobs: int
    """Job ids are 1..max_jobs-1 (INNET_MAX_JOBS; counter index 0 is unknown jobs)."""
    bitmap: str
    count: str
    epoch: str
    """Per-copy register of the epoch a copy's state belongs to."""
    acc: tuple[str, ...]
    param: tuple[str, ...]
    mom: tuple[str, ...]
    counters: tuple[str, ...]

    @classmethod
    def from_schema(cls, schema: P4Schema) -> "InnetLayout":
        """Raises SchemaError naming what is missing when the pipeline is not innet.p4."""
        names = schema.registers.names()

        def series(stem: str) -> tuple[str, ...]:
            found: dict[int, str] = {}
            for n in names:
                m = re.fullmatch(r"(?:.*\.)?" + stem + r"_(\d+)", n)
                if m:
                    found[int(m.group(1))] = n
            if sorted(found) != list(range(len(found))):
                raise SchemaError(f"registers {stem}_<i> are not numbered 0..n-1: {sorted(found)}")
            return tuple(found[i] for i in range(len(found)))

        try:
            bitmap, count = schema.register("innet_bitmap"), schema.register("innet_count")
            epoch = schema.register("innet_epoch")
            acc, param, mom = series("innet_acc"), series("innet_param"), series("innet_mom")
            counters = tuple(schema.counter(c).name for c in COUNTERS)
            schema.table(JOBS_TABLE)
        except SchemaError as error:  # a near match in another program is no help: no "Did you mean"
            raise SchemaError(f"the pipeline is not innet.p4: {str(error).split('. Did you mean')[0]}") from None
        if not acc or len(acc) != len(param) or len(acc) != len(mom):
            raise SchemaError(f"the pipeline is not innet.p4: {len(acc)} innet_acc_<i>, {len(param)} "
                              f"innet_param_<i>, {len(mom)} innet_mom_<i> registers (need the same K > 0)")
        return cls(k=len(acc), slots=bitmap.size // 2, param_chunks=schema.register(param[0]).size,
                   max_jobs=schema.counter(COUNTERS[0]).size, bitmap=bitmap.name, count=count.name, epoch=epoch.name,
                   acc=acc, param=param, mom=mom, counters=counters)


@dataclass(frozen=True)
class WorkerSpec:
    """One worker of a job, as the switch addresses its RESULT replica."""

    rank: int
    """Rank 0..N-1 (bit ``rank`` of the slot bitmaps; the replica's rid)."""
    port: int
    """Switch port behind which the worker sits."""
    mac: str
    """Worker MAC address (``aa:bb:cc:dd:ee:ff``)."""
    ip: str
    """Worker IPv4 address."""
    udp_port: int
    """UDP port the worker's agent receives RESULTs on."""
    switch_ports: tuple[tuple[str, int], ...] = ()
    """Per-switch ports when the job spans switches: (switch name, port); others use ``port``."""

    @classmethod
    def parse(cls, text: str) -> "WorkerSpec":
        """``RANK,PORT,MAC,IP,UDP_PORT`` (the ``innet job create --worker`` form)."""
        parts = text.split(",")
        if len(parts) != 5:
            raise JobError(f"worker {text!r}: expected RANK,PORT,MAC,IP,UDP_PORT")
        try:
            return cls(int(parts[0]), int(parts[1]), parts[2], parts[3], int(parts[4]))
        except ValueError:
            raise JobError(f"worker {text!r}: RANK, PORT and UDP_PORT must be integers") from None

    def port_on(self, switch: str) -> int:
        return dict(self.switch_ports).get(switch, self.port)


@dataclass(frozen=True)
class OwnerSpec:
    """A member owning a range of a job's chunks: REDUCE sums of them are sent to it, and it
    BCASTs them (docs/PROTOCOL.md, "Reduce-to and broadcast"). Its rank is outside the
    workers' (``N..31``); it is addressed like a worker (``innet_workers``, its own group
    with the workers)."""

    member: WorkerSpec
    first_chunk: int
    chunks: int

    @classmethod
    def parse(cls, text: str) -> "OwnerSpec":
        """``RANK,PORT,MAC,IP,UDP_PORT,FIRST_CHUNK,CHUNKS`` (``innet job create --owner``)."""
        parts = text.split(",")
        if len(parts) != 7:
            raise JobError(f"owner {text!r}: expected RANK,PORT,MAC,IP,UDP_PORT,FIRST_CHUNK,CHUNKS")
        try:
            first, chunks = int(parts[5]), int(parts[6])
        except ValueError:
            raise JobError(f"owner {text!r}: FIRST_CHUNK and CHUNKS must be integers") from None
        return cls(WorkerSpec.parse(",".join(parts[:5])), first, chunks)

    @property
    def rank(self) -> int:
        return self.member.rank

    def range(self) -> OwnerRange:
        """The chunk range as agents know it (``JobConfig.owners``); raises JobError."""
        try:
            return OwnerRange(self.member.rank, self.first_chunk, self.chunks)
        except OwnersError as error:
            raise JobError(str(error)) from None


@dataclass(frozen=True)
class JobSpec:
    """A job: its workers, its slots and parameter range on each switch, its mode."""

    job_id: int
    """Job id (1..max_jobs-1), the innet header's ``job``."""
    workers: tuple[WorkerSpec, ...]
    """Every worker, ranks 0..N-1."""
    slot_base: int
    """First slot of the job's range on each switch."""
    slot_count: int
    """Slots in the job's range (the agents' window)."""
    k: int = 64
    """Values per packet; must equal the pipeline's INNET_K."""
    mode: str = "sum"
    """``sum``, ``sgd`` or ``momentum``."""
    lr: float = 0.0
    """Learning rate (float; converted with 1/N and the fixed-point scales folded in)."""
    beta: float = 0.0
    """Momentum coefficient in [0, 1)."""
    grad_frac_bits: int = 16
    """Fractional bits of the workers' int32 gradients."""
    param_frac_bits: int = 16
    """Fractional bits of the int32 parameters stored on the switch."""
    param_base: int = 0
    """First parameter chunk (register index) of the job on each switch."""
    param_chunks: int = 0
    """Chunks of K parameters of the whole vector (split across switches by a ShardPlan)."""
    mcast_grp: int = 0
    """Multicast group of the RESULTs; 0 means ``job_id``."""
    owners: tuple[OwnerSpec, ...] = ()
    """Chunk owners for REDUCE/BCAST (sum mode); each gets ``innet_owners`` entries and the
    group ``innet.wire.owners.owner_group(job_id, rank)`` of the workers and itself."""

    @property
    def num_workers(self) -> int:
        return len(self.workers)

    def owner_ranges(self) -> tuple[OwnerRange, ...]:
        """``JobConfig.owners`` for this job's agents."""
        return tuple(o.range() for o in self.owners)

    def members(self) -> tuple[WorkerSpec, ...]:
        """Workers and owners: everyone the switch addresses."""
        return self.workers + tuple(o.member for o in self.owners)

    @property
    def mode_value(self) -> Mode:
        try:
            return Mode[self.mode.upper()]
        except KeyError:
            raise JobError(f"job {self.job_id}: mode {self.mode!r} is not one of sum, sgd, momentum") from None

    @property
    def group(self) -> int:
        return self.mcast_grp or self.job_id

    def optimizer(self) -> tuple[int, int, int, int]:
        """(lr, lr_shift, beta, beta_shift) as the switch's integers (zeros in sum mode)."""
        if self.mode_value == Mode.SUM:
            return 0, 0, 0, 0
        try:
            p = optimizer_params(self.lr, self.num_workers, self.grad_frac_bits, self.param_frac_bits,
                                 self.beta if self.mode_value == Mode.MOMENTUM else 0.0)
        except QuantizeError as error:
            raise JobError(f"job {self.job_id}: {error}") from None
        return p.lr, p.lr_shift, p.beta, p.beta_shift


@dataclass(frozen=True)
class JobInfo:
    """A job as installed on one switch (decoded from its ``innet_jobs`` entry)."""

    job_id: int
    mode: str
    num_workers: int
    mcast_grp: int
    slot_base: int
    slot_count: int
    param_base: int
    param_chunks: int
    lr: int
    lr_shift: int
    beta: int
    beta_shift: int
    epoch: int = 0
    """The attached worker set's incarnation; 0: none attached yet."""

    @classmethod
    def from_entry(cls, entry: TableEntry) -> "JobInfo":
        p = {k: int(v) for k, v in entry.params.items()}
        job = next(iter(entry.match.values()))
        assert isinstance(job, int)
        try:
            mode = Mode(p["mode"]).name.lower()
        except ValueError:
            mode = f"unknown({p['mode']})"
        return cls(job, mode, p["num_workers"], p["mcast_grp"], p["slot_base"], p["slot_count"],
                   p["param_base"], p["param_chunks"], to_signed(p["lr"], 32), p["lr_shift"],
                   to_signed(p["beta"], 32), p["beta_shift"], p["epoch"])

    @property
    def cells(self) -> range:
        """Cells of the per-copy registers: 2*slot + copy."""
        return range(2 * self.slot_base, 2 * (self.slot_base + self.slot_count))

    @property
    def chunks(self) -> range:
        return range(self.param_base, self.param_base + self.param_chunks)


def validate(job: JobSpec, layout: InnetLayout, param_chunks: int, others: list[JobInfo]) -> None:
    """JobError naming the first inconsistency of ``job`` (with ``param_chunks`` on this
    switch) against the pipeline and the jobs already installed."""
    what = f"job {job.job_id}"
    if not 1 <= job.job_id < layout.max_jobs:
        raise JobError(f"{what}: job id {job.job_id} is outside 1..{layout.max_jobs - 1} (INNET_MAX_JOBS)")
    if job.k != layout.k:
        raise JobError(f"{what}: k={job.k} but the pipeline has INNET_K={layout.k}")
    job.mode_value
    ranks = sorted(w.rank for w in job.workers)
    if not 1 <= len(ranks) <= MAX_WORKERS:
        raise JobError(f"{what}: {len(ranks)} workers, need 1..{MAX_WORKERS}")
    if ranks != list(range(len(ranks))):
        raise JobError(f"{what}: worker ranks must be 0..{len(ranks) - 1} each once, got {ranks}")
    for w in job.workers:
        for label, value in (("mac", w.mac), ("ip", w.ip)):
            try:
                parse_value(value, f"{what} worker {w.rank} {label}")
            except SchemaError as error:
                raise JobError(str(error)) from None
        if not 0 <= w.udp_port < (1 << 16):
            raise JobError(f"{what} worker {w.rank}: UDP port {w.udp_port} is outside 0..65535")
    if job.slot_count < 1 or job.slot_base < 0 or job.slot_base + job.slot_count > layout.slots:
        raise JobError(f"{what}: slots {job.slot_base}..{job.slot_base + job.slot_count - 1} are outside "
                       f"0..{layout.slots - 1} (INNET_SLOTS) or empty")
    if job.mode_value != Mode.SUM and param_chunks < 1:
        raise JobError(f"{what}: mode {job.mode} needs param_chunks >= 1")
    if job.param_base < 0 or job.param_base + param_chunks > layout.param_chunks:
        raise JobError(f"{what}: parameter chunks {job.param_base}..{job.param_base + param_chunks - 1} "
                       f"are outside 0..{layout.param_chunks - 1} (INNET_PARAM_CHUNKS)")
    if not 1 <= job.group < OWNER_GROUP_BASE:
        raise JobError(f"{what}: multicast group {job.group} is outside 1..{OWNER_GROUP_BASE - 1} (groups from "
                       f"{OWNER_GROUP_BASE:#x} are the owners')")
    if job.owners:
        _validate_owners(job, what)
    for o in others:
        if o.job_id == job.job_id:
            raise JobError(f"{what} exists already on this switch; destroy it first")
        if o.slot_base < job.slot_base + job.slot_count and job.slot_base < o.slot_base + o.slot_count:
            raise JobError(f"{what}: slots {job.slot_base}..{job.slot_base + job.slot_count - 1} overlap "
                           f"job {o.job_id}'s {o.slot_base}..{o.slot_base + o.slot_count - 1}")
        if param_chunks and o.param_chunks and (o.param_base < job.param_base + param_chunks
                                                and job.param_base < o.param_base + o.param_chunks):
            raise JobError(f"{what}: parameter chunks {job.param_base}..{job.param_base + param_chunks - 1} "
                           f"overlap job {o.job_id}'s {o.param_base}..{o.param_base + o.param_chunks - 1}")
        if o.mcast_grp == job.group:
            raise JobError(f"{what}: multicast group {job.group} is used by job {o.job_id}")


def _validate_owners(job: JobSpec, what: str) -> None:
    if job.mode_value != Mode.SUM:
        raise JobError(f"{what}: owners (REDUCE/BCAST) need mode sum, not {job.mode}")
    try:
        check_owners(job.owner_ranges(), job.num_workers, what)
        for o in job.owners:
            owner_group(job.job_id, o.rank)
    except OwnersError as error:
        raise JobError(str(error)) from None
    for o in job.owners:
        for label, value in (("mac", o.member.mac), ("ip", o.member.ip)):
            try:
                parse_value(value, f"{what} owner {o.rank} {label}")
            except SchemaError as error:
                raise JobError(str(error)) from None
        if not 0 <= o.member.udp_port < (1 << 16):
            raise JobError(f"{what} owner {o.rank}: UDP port {o.member.udp_port} is outside 0..65535")


def owner_entries(job: JobSpec) -> list[TableEntry]:
    """``innet_owners``: each owner's range as its aligned chunk prefixes (a prefix of
    length 0 is the whole chunk space: the field is left out, a wildcard)."""
    out = []
    for o in job.owners:
        for value, length in prefixes(o.first_chunk, o.chunks):
            match: dict[str, Match] = {"job": job.job_id}
            if length:
                match["chunk"] = Lpm(value, length)
            out.append(TableEntry(OWNERS_TABLE, match, "set_owner",
                                  {"rank": o.rank, "mcast_grp": owner_group(job.job_id, o.rank)}))
    return out


def owner_groups(job: JobSpec, switch: str) -> dict[int, list[Replica]]:
    """Each owner's multicast group: the workers and the owner (rid = rank)."""
    return {owner_group(job.job_id, o.rank): replicas(job, switch) + [Replica(o.member.port_on(switch), o.rank)]
            for o in job.owners}


@dataclass(frozen=True)
class OwnerInfo:
    """An owner's range as installed on a switch (its prefixes merged back)."""

    rank: int
    first_chunk: int
    chunks: int
    mcast_grp: int


def owners_from_entries(entries: list[TableEntry], job_id: int) -> list[OwnerInfo]:
    """The ``innet_owners`` entries of ``job_id`` as ranges per rank (adjacent prefixes of one
    rank merged), by first chunk."""
    blocks = []
    for e in entries:
        if e.is_default or _match_value(e, "job") != job_id:
            continue
        chunk = next((m for name, m in e.match.items() if name.rsplit(".", 1)[-1] == "chunk"), None)
        first, size = (0, 1 << 32) if not isinstance(chunk, Lpm) else (
            int(chunk.value) if isinstance(chunk.value, int) else parse_value(chunk.value, "chunk"),
            1 << (32 - chunk.prefix_len))
        blocks.append((first, size, int(e.params["rank"]), int(e.params["mcast_grp"])))
    out: list[OwnerInfo] = []
    for first, size, rank, grp in sorted(blocks):
        last = out[-1] if out else None
        if last is not None and last.rank == rank and last.first_chunk + last.chunks == first:
            out[-1] = OwnerInfo(rank, last.first_chunk, last.chunks + size, grp)
        else:
            out.append(OwnerInfo(rank, first, size, grp))
    return out


def _match_value(entry: TableEntry, short: str) -> int | None:
    for name, value in entry.match.items():
        if name.rsplit(".", 1)[-1] == short and isinstance(value, int):
            return value
    return None


def job_entry(job: JobSpec, param_chunks: int, epoch: int = 0) -> TableEntry:
    """The ``innet_jobs`` entry; ``epoch`` 0 (as created) refuses every CONTRIB until a
    worker set attaches."""
    lr, lr_shift, beta, beta_shift = job.optimizer()
    values = (int(job.mode_value), job.num_workers, job.group, job.slot_base, job.slot_count,
              job.param_base, param_chunks, lr, lr_shift, beta, beta_shift, epoch)
    return TableEntry(JOBS_TABLE, {"job": job.job_id}, "set_job", dict(zip(SET_JOB_PARAMS, values)))


def attached_entry(info: JobInfo, epoch: int) -> TableEntry:
    """``info``'s ``innet_jobs`` entry moved to ``epoch`` (everything else unchanged)."""
    values = (int(Mode[info.mode.upper()]), info.num_workers, info.mcast_grp, info.slot_base,
              info.slot_count, info.param_base, info.param_chunks, info.lr & 0xFFFFFFFF,
              info.lr_shift, info.beta & 0xFFFFFFFF, info.beta_shift, epoch)
    return TableEntry(JOBS_TABLE, {"job": info.job_id}, "set_job", dict(zip(SET_JOB_PARAMS, values)))


def next_epoch(current: list[int]) -> int:
    """The epoch after every one in ``current`` (the job's epochs on its switches)."""
    top = max(current, default=0)
    if top >= MAX_EPOCH:
        raise JobError(f"job epoch {top} is the last one (bit<32>); destroy and re-create the job")
    return top + 1


def worker_entry(job_id: int, w: WorkerSpec) -> TableEntry:
    """``innet_workers`` of one member: where its RESULT replica (rid = rank) goes."""
    return TableEntry(WORKERS_TABLE, {"job": job_id, "egress_rid": w.rank}, "set_worker",
                      {"mac": w.mac, "ip": w.ip, "udp_port": w.udp_port})


def worker_entries(job: JobSpec) -> list[TableEntry]:
    """``innet_workers`` of the workers and the owners."""
    return [worker_entry(job.job_id, w) for w in job.members()]


def replicas(job: JobSpec, switch: str) -> list[Replica]:
    return [Replica(w.port_on(switch), w.rank) for w in sorted(job.workers, key=lambda w: w.rank)]


def clear_cells(layout: InnetLayout, info: JobInfo) -> dict[str, range]:
    """The register cells of a job to zero: slot copies and parameter chunks."""
    out: dict[str, range] = {}
    for name in (layout.bitmap, layout.count, layout.epoch, *layout.acc):
        out[name] = info.cells
    if info.param_chunks:
        for name in (*layout.param, *layout.mom):
            out[name] = info.chunks
    return out


@dataclass(frozen=True)
class Route:
    """An ``ipv4_lpm`` entry."""

    prefix: str
    """``A.B.C.D/LEN`` (a bare address is /32)."""
    mac: str
    """Next-hop MAC written as destination."""
    port: int
    """Egress port."""


@dataclass(frozen=True)
class Forwarding:
    """A switch's own address and its IPv4/ARP tables."""

    switch_mac: str
    """MAC the switch's RESULTs and ARP replies come from."""
    switch_ip: str
    """The switch's innet address (workers send CONTRIBs to it)."""
    routes: tuple[Route, ...] = ()
    arp: tuple[tuple[str, str], ...] = field(default=())
    """Proxy ARP answers (ip, mac); the switch's own IP is answered without an entry."""

    @classmethod
    def for_workers(cls, switch_mac: str, switch_ip: str, workers: tuple[WorkerSpec, ...],
                    switch: str = "") -> "Forwarding":
        """A /32 route to every worker behind its port."""
        return cls(switch_mac, switch_ip, tuple(Route(f"{w.ip}/32", w.mac, w.port_on(switch)) for w in workers))

    def entries(self) -> Iterator[TableEntry]:
        yield TableEntry(ADDR_TABLE, {}, "set_switch_addr", {"mac": self.switch_mac, "ip": self.switch_ip},
                         is_default=True)
        for r in self.routes:
            prefix = r.prefix if "/" in r.prefix else r.prefix + "/32"
            yield TableEntry(LPM_TABLE, {"dstAddr": prefix}, "ipv4_forward", {"mac": r.mac, "port": r.port})
        for ip, mac in self.arp:
            yield TableEntry(ARP_TABLE, {"targetIp": ip}, "arp_reply", {"mac": mac})
