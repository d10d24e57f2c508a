"""innet operations on one connected switch running innet.p4: forwarding, jobs,
parameters, state.  Layout (K, slots, ...) is read from the pipeline's P4Info.

    with Switch(spec) as sw:
        sw.push(PipelineConfig.load("p4/innet.p4"))
        node = InnetSwitch(sw)
        node.install_forwarding(Forwarding.for_workers(mac, ip, job.workers))
        node.create_job(job)
        node.load_params(job.job_id, np.arange(4 * node.layout.k, dtype=np.int32))
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import grpc
import numpy as np
import numpy.typing as npt

from innet.controller import jobs as J
from innet.controller.entities import TableEntry
from innet.controller.errors import JobError, WriteError
from innet.controller.switch import Switch

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Occupancy:
    """Slot copies of one job by state."""

    job_id: int
    copies: int
    """2 * slot_count."""
    idle: int
    """count == 0."""
    busy: int
    """0 < count < num_workers: contributions outstanding."""
    complete: int
    """count == num_workers: result stored."""
    contributors: tuple[int, ...]
    """Per copy, number of bits set in its bitmap (cell order)."""


@dataclass(frozen=True)
class CopyState:
    """A job's slot copies as the switch holds them (``idx = (slot_base + slot) * 2 + VER``,
    counted from the job's first cell)."""

    info: J.JobInfo
    count: npt.NDArray[np.int64]
    bitmap: npt.NDArray[np.int64]
    epoch: npt.NDArray[np.int64]


class InnetSwitch:
    """innet.p4 on one switch."""

    def __init__(self, switch: Switch) -> None:
        self.switch = switch
        self._layout: J.InnetLayout | None = None
        self._forwarding: list[J.Forwarding] = []
        """Forwarding installed through this object, in order (re-installed after a restart)."""
        self._jobs: dict[int, tuple[J.JobSpec, int]] = {}
        """Jobs created through this object and not destroyed: spec and chunks on this switch."""
        switch.restorers.append(self._restore)

    @property
    def name(self) -> str:
        return self.switch.spec.name

    @property
    def layout(self) -> J.InnetLayout:
        if self._layout is None:
            self._layout = J.InnetLayout.from_schema(self.switch.schema)
        return self._layout

    # -- forwarding ----------------------------------------------------------------------

    def install_forwarding(self, forwarding: J.Forwarding) -> None:
        """Switch address, routes and ARP entries; entries that exist are modified."""
        self._upsert(list(forwarding.entries()))
        if forwarding not in self._forwarding:
            self._forwarding.append(forwarding)

    def _restore(self) -> None:
        """After a reconnect (``Switch.restore``): install the forwarding again and create
        the jobs the switch no longer has. A re-created job starts from zero: parameters,
        momentum and slots lived in the switch's registers, which a restart clears."""
        self._layout = None
        for forwarding in self._forwarding:
            self._upsert(list(forwarding.entries()))
        present = {j.job_id for j in self.jobs()}
        for job, chunks in list(self._jobs.values()):
            if job.job_id not in present:
                LOG.warning("switch %s: job %d is gone (restart); creating it again, its parameters "
                            "start from zero and it is at epoch 0 (worker sets must attach again)", self.name, job.job_id)
                self.create_job(job, chunks)

    def _upsert(self, entries: list[TableEntry]) -> None:
        try:
            self.switch.insert(entries)
        except WriteError as error:
            exists = [f.index for f in error.failures if f.code == grpc.StatusCode.ALREADY_EXISTS]
            if len(exists) != len(error.failures):
                raise
            self.switch.modify([entries[i] for i in exists])

    # -- jobs ----------------------------------------------------------------------------

    def jobs(self) -> list[J.JobInfo]:
        """Jobs installed on this switch, by job id."""
        return sorted((J.JobInfo.from_entry(e) for e in self.switch.read_table(J.JOBS_TABLE) if not e.is_default),
                      key=lambda j: j.job_id)

    def job(self, job_id: int) -> J.JobInfo:
        for j in self.jobs():
            if j.job_id == job_id:
                return j
        raise JobError(f"switch {self.name}: no job {job_id} (innet_jobs has "
                       f"{[j.job_id for j in self.jobs()] or 'no entries'})")

    def create_job(self, job: J.JobSpec, param_chunks: int | None = None) -> J.JobInfo:
        """Validate, clear the job's registers, install workers, the multicast group and
        (last, so packets are only aggregated once everything is ready) the job entry.
        ``param_chunks``: this switch's shard (default: all of ``job.param_chunks``)."""
        chunks = job.param_chunks if param_chunks is None else param_chunks
        J.validate(job, self.layout, chunks, self.jobs())
        entry = J.job_entry(job, chunks)
        info = J.JobInfo.from_entry(TableEntry(entry.table, entry.match, entry.action, {
            k: (v if isinstance(v, int) else 0) for k, v in entry.params.items()}))
        self._clear(info)
        self.switch.reset_counters((c, job.job_id) for c in self.layout.counters)
        self._upsert(J.worker_entries(job))
        self.switch.set_multicast_group(job.group, J.replicas(job, self.name))
        for group, members in J.owner_groups(job, self.name).items():
            self.switch.set_multicast_group(group, members)
        if job.owners:
            self._upsert(J.owner_entries(job))
        self.switch.insert([entry])
        self._jobs[job.job_id] = (job, chunks)
        return self.job(job.job_id)

    def attach(self, job_id: int, epoch: int) -> J.JobInfo:
        """Move the job to ``epoch`` (one MODIFY): CONTRIBs of any other epoch are answered
        STALE from now on, and slot copies of earlier epochs count as empty."""
        info = self.job(job_id)
        self.switch.modify([J.attached_entry(info, epoch)])
        return self.job(job_id)

    def destroy_job(self, job_id: int) -> J.JobInfo:
        """Remove the job entry first (packets stop aggregating), then its workers and
        group, and zero its registers and counters."""
        info = self.job(job_id)
        self._jobs.pop(job_id, None)
        self.switch.delete([TableEntry(J.JOBS_TABLE, {"job": job_id})])
        owners = self.owners(job_id)
        entries = [e for e in self.switch.read_table(J.OWNERS_TABLE)
                   if not e.is_default and _match_int(e, "job") == job_id]
        if entries:
            self.switch.delete(entries)
        workers = [e for e in self.switch.read_table(J.WORKERS_TABLE)
                   if not e.is_default and _match_int(e, "job") == job_id]
        if workers:
            self.switch.delete(workers)
        groups = self.switch.read_multicast_groups()
        for group in [info.mcast_grp] + [o.mcast_grp for o in owners]:
            if group in groups:
                self.switch.delete_multicast_group(group)
        self._clear(info)
        self.switch.reset_counters((c, job_id) for c in self.layout.counters)
        return info

    def _clear(self, info: J.JobInfo) -> None:
        for name, cells in J.clear_cells(self.layout, info).items():
            self.switch.write_register(name, cells.start, np.zeros(len(cells), np.int64))

    def owners(self, job_id: int) -> list[J.OwnerInfo]:
        """The job's chunk owners (``innet_owners``), one range per rank, by first chunk."""
        return J.owners_from_entries(self.switch.read_table(J.OWNERS_TABLE), job_id)

    # -- parameters ----------------------------------------------------------------------

    def load_params(self, job_id: int, values: npt.ArrayLike, momentum: npt.ArrayLike | None = None) -> None:
        """Write the int32 parameter shard (element ``chunk*K + i`` into ``param_<i>``
        at ``param_base + chunk``), zero-padded to whole chunks; momentum is zeroed
        unless given."""
        info = self.job(job_id)
        k = self.layout.k
        w = _chunked(values, info.param_chunks, k, f"job {job_id} parameters on switch {self.name}")
        m = (np.zeros_like(w) if momentum is None
             else _chunked(momentum, info.param_chunks, k, f"job {job_id} momentum on switch {self.name}"))
        base = info.param_base
        for i in range(k):  # one range of cells per register (innet's register-range entities)
            self.switch.write_register(self.layout.param[i], base, w[:, i])
            self.switch.write_register(self.layout.mom[i], base, m[:, i])

    def read_params(self, job_id: int, momentum: bool = False) -> npt.NDArray[np.int32]:
        """The job's parameter (or momentum) shard as int32, ``param_chunks * K`` long."""
        info = self.job(job_id)
        names = self.layout.mom if momentum else self.layout.param
        out = np.zeros((info.param_chunks, self.layout.k), dtype=np.uint32)
        for i, name in enumerate(names):
            out[:, i] = self.switch.read_register(name, info.chunks)
        return out.reshape(-1).view(np.int32)

    def replace_worker(self, job_id: int, worker: J.WorkerSpec) -> None:
        """Address rank ``worker.rank`` of a live job at another host (a spare taking over a
        failed one): its ``innet_workers`` entry and its replica in the job's multicast group.
        Slot state, parameters and the epoch stay, so the new host continues the rank's
        stream where the old one stopped."""
        if job_id not in self._jobs:
            raise JobError(f"switch {self.name}: job {job_id} was not created by this controller; "
                           "its workers cannot be replaced")
        job, chunks = self._jobs[job_id]
        ranks = [w.rank for w in job.workers]
        if worker.rank not in ranks:
            raise JobError(f"switch {self.name}: job {job_id} has no worker of rank {worker.rank} "
                           f"(ranks {min(ranks)}..{max(ranks)})")
        job = replace(job, workers=tuple(worker if w.rank == worker.rank else w for w in job.workers))
        self.switch.modify([J.worker_entry(job_id, worker)])
        self.switch.set_multicast_group(job.group, J.replicas(job, self.name))
        self._jobs[job_id] = (job, chunks)

    # -- state ---------------------------------------------------------------------------

    def copy_state(self, job_id: int) -> CopyState:
        """Every slot copy of the job: count, bitmap and epoch (cell order)."""
        info = self.job(job_id)
        layout = self.layout
        return CopyState(info, *(np.asarray(self.switch.read_register(name, info.cells), np.int64)
                                 for name in (layout.count, layout.bitmap, layout.epoch)))

    def occupancy(self, job_id: int) -> Occupancy:
        info = self.job(job_id)
        counts = self.switch.read_register(self.layout.count, info.cells)
        bitmaps = self.switch.read_register(self.layout.bitmap, info.cells)
        n = info.num_workers
        return Occupancy(job_id, len(counts), sum(1 for c in counts if c == 0),
                         sum(1 for c in counts if 0 < c < n), sum(1 for c in counts if c == n),
                         tuple(bin(b).count("1") for b in bitmaps))

    def completions(self, job_id: int) -> int:
        """The job's ``innet_completions`` (one counter read: cheap enough to poll)."""
        name = next(c for c in self.layout.counters if c.endswith("innet_completions"))
        return self.switch.read_counter(name, job_id).get(job_id, (0, 0))[0]

    def counters(self, job_id: int | None = None) -> dict[str, dict[int, int]]:
        """Short counter name -> {job index: packets}; one job or every index."""
        out: dict[str, dict[int, int]] = {}
        for name in self.layout.counters:
            cells = self.switch.read_counter(name, job_id)
            out[name.rsplit(".", 1)[-1]] = {i: pkts for i, (pkts, _) in sorted(cells.items())}
        return out


def _match_int(entry: TableEntry, short: str) -> int | None:
    for name, value in entry.match.items():
        if name.rsplit(".", 1)[-1] == short and isinstance(value, int):
            return value
    return None


def _chunked(values: npt.ArrayLike, chunks: int, k: int, what: str) -> npt.NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise JobError(f"{what}: expected int32 fixed-point values, got dtype {arr.dtype} "
                       "(quantize floats first, e.g. Controller.load_params does)")
    arr = arr.astype(np.int64).ravel()
    if arr.size > chunks * k:
        raise JobError(f"{what}: {arr.size} values do not fit {chunks} chunks of K={k} ({chunks * k} values)")
    if arr.size and (arr.min() < -(1 << 31) or arr.max() >= (1 << 31)):
        raise JobError(f"{what}: values outside the int32 range")
    out = np.zeros(chunks * k, dtype=np.int64)
    out[:arr.size] = arr
    return out.reshape(chunks, k)
