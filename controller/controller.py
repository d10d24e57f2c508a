"""The multi-switch controller: connect to every switch of a topology, push innet.p4,
install forwarding, create jobs with their parameter vector sharded across switches,
load and read parameters.

    specs = [SwitchEndpoint("s1", "127.0.0.1:9559")]
    with Controller(specs) as ctl:
        ctl.push(PipelineConfig.load("p4/innet.p4"))
        plan = ctl.create_job(job)                  # ShardPlan: chunks per switch
        ctl.load_params(job, np.zeros(n, np.float32))
        w = ctl.read_params(job)                    # float32 again
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from innet.controller.errors import ControllerError, JobError
from innet.controller.innet_switch import InnetSwitch
from innet.controller.jobs import Forwarding, JobInfo, JobSpec, OwnerInfo, WorkerSpec, next_epoch
from innet.controller.pipeline import PipelineConfig
from innet.wire.shard import Shard, ShardPlan, ShardPlanError
from innet.controller.switch import Switch, SwitchEndpoint, connect_all
from innet.wire.quantize import dequantize, quantize


class Controller:
    """Sessions with several switches; each job is installed on every switch of its plan."""

    def __init__(self, specs: Sequence[SwitchEndpoint]) -> None:
        names = [s.name for s in specs]
        if not specs or len(set(names)) != len(names):
            raise ControllerError(f"controller needs switches with distinct names, got {names}")
        self.specs = tuple(specs)
        self.switches: dict[str, InnetSwitch] = {}
        self.plans: dict[int, ShardPlan] = {}

    def connect(self) -> "Controller":
        self.switches = {sw.spec.name: InnetSwitch(sw) for sw in connect_all(self.specs)}
        return self

    def close(self) -> None:
        switches, self.switches = self.switches, {}
        for node in switches.values():
            node.switch.close()

    def __enter__(self) -> "Controller":
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getitem__(self, name: str) -> InnetSwitch:
        try:
            return self.switches[name]
        except KeyError:
            raise ControllerError(f"no switch named {name!r}; known: {sorted(self.switches)}") from None

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.specs]

    # -- pipeline and forwarding ---------------------------------------------------------

    def push(self, config: PipelineConfig, switches: Sequence[str] | None = None) -> None:
        for name in switches or self.names:
            node = self[name]
            node.switch.push(config)
            node._layout = None

    def install_forwarding(self, forwarding: Mapping[str, Forwarding]) -> None:
        """Per switch name, its address and tables."""
        for name, fwd in forwarding.items():
            self[name].install_forwarding(fwd)

    # -- jobs ----------------------------------------------------------------------------

    def plan_for(self, job: JobSpec, switches: Sequence[str] | None = None) -> ShardPlan:
        """The default plan: the job's chunks split evenly over ``switches`` (all)."""
        try:
            return ShardPlan.contiguous(job.param_chunks, list(switches or self.names))
        except ShardPlanError as error:
            raise JobError(f"job {job.job_id}: {error}") from None

    def create_job(self, job: JobSpec, plan: ShardPlan | None = None) -> ShardPlan:
        """Install ``job`` on every switch of ``plan``; on failure, the switches already
        done are rolled back."""
        plan = plan or self.plan_for(job)
        if plan.total_chunks != job.param_chunks:
            raise JobError(f"job {job.job_id}: plan covers {plan.total_chunks} chunks, job has {job.param_chunks}")
        done: list[str] = []
        try:
            for shard in plan.shards:
                self[shard.switch].create_job(job, shard.chunks)
                done.append(shard.switch)
        except BaseException:
            for name in done:
                self[name].destroy_job(job.job_id)
            raise
        self.plans[job.job_id] = plan
        return plan

    def create_sharded_job(self, jobs: Mapping[str, JobSpec], plan: ShardPlan) -> ShardPlan:
        """Install one job id with a different worker set per switch (``jobs[switch]``, e.g.
        the GPUs of each rail), each switch holding its shard of ``plan``; rolled back on
        failure like :meth:`create_job`. Attach, parameters and destroy then work on the
        whole job as for :meth:`create_job`."""
        ids = {job.job_id for job in jobs.values()}
        if len(ids) != 1 or set(jobs) != {s.switch for s in plan.shards}:
            raise JobError(f"sharded job: one job id on exactly the plan's switches "
                           f"{[s.switch for s in plan.shards]}, got ids {sorted(ids)} on {sorted(jobs)}")
        done: list[str] = []
        try:
            for shard in plan.shards:
                self[shard.switch].create_job(jobs[shard.switch], shard.chunks)
                done.append(shard.switch)
        except BaseException:
            for name in done:
                self[name].destroy_job(jobs[name].job_id)
            raise
        self.plans[next(iter(ids))] = plan
        return plan

    def attach(self, job_id: int) -> int:
        """Start a new incarnation of ``job_id`` for a worker set: the next epoch, the same on
        every switch of the job's plan; the agents of the set must all use it
        (``JobConfig.epoch``). Agents of earlier sets get STALE answers from then on, and
        their slot state cannot leak into the new set's results (docs/PROTOCOL.md)."""
        switches = [shard.switch for shard in self._plan(job_id).shards]
        epoch = next_epoch([self[name].job(job_id).epoch for name in switches])
        for name in switches:
            self[name].attach(job_id, epoch)
        return epoch

    def replace_worker(self, job_id: int, switch: str, worker: WorkerSpec) -> None:
        """Rank ``worker.rank`` of live job ``job_id`` is now ``worker`` on ``switch`` (same
        epoch, state kept): see :meth:`InnetSwitch.replace_worker`."""
        self[switch].replace_worker(job_id, worker)

    def destroy_job(self, job_id: int) -> list[str]:
        """Remove ``job_id`` from every switch that has it; the names of those switches."""
        out = []
        for name, node in self.switches.items():
            if any(j.job_id == job_id for j in node.jobs()):
                node.destroy_job(job_id)
                out.append(name)
        self.plans.pop(job_id, None)
        if not out:
            raise JobError(f"job {job_id} is not installed on any switch ({', '.join(self.names)})")
        return out

    def jobs(self) -> dict[str, list[JobInfo]]:
        return {name: node.jobs() for name, node in self.switches.items()}

    def owners(self, job_id: int) -> list[OwnerInfo]:
        """The chunk owners of ``job_id`` (REDUCE/BCAST), as the first switch of its plan has
        them (every switch of the job has the same)."""
        return self[self._plan(job_id).shards[0].switch].owners(job_id)

    def _plan(self, job_id: int) -> ShardPlan:
        if job_id in self.plans:
            return self.plans[job_id]
        # a job created by another controller process: rebuild its plan from the switches
        shards = []
        first = 0
        for name in self.names:
            for info in self[name].jobs():
                if info.job_id == job_id:
                    shards.append(Shard(name, first, info.param_chunks))
                    first += info.param_chunks
        if not shards:
            raise JobError(f"job {job_id} is not installed on any switch ({', '.join(self.names)})")
        try:
            return ShardPlan(tuple(shards))
        except ShardPlanError as error:
            raise JobError(f"job {job_id}: {error}") from None

    # -- parameters ----------------------------------------------------------------------

    def load_params(self, job: JobSpec | int, values: npt.ArrayLike, param_frac_bits: int = 16) -> None:
        """Load the whole vector of a job (a JobSpec, or a job id with ``param_frac_bits``):
        floats are quantized, ints are taken as int32 fixed point.  Each switch gets its
        shard; momentum is zeroed."""
        job_id, frac = (job.job_id, job.param_frac_bits) if isinstance(job, JobSpec) else (job, param_frac_bits)
        arr = np.asarray(values).ravel()
        if arr.dtype.kind == "f":
            arr = quantize(arr, frac, what=f"job {job_id} parameters").values
        plan = self._plan(job_id)
        k = self[plan.shards[0].switch].layout.k
        if arr.size > plan.total_chunks * k:
            raise JobError(f"job {job_id}: {arr.size} parameters do not fit {plan.total_chunks} chunks of K={k}")
        for shard in plan.shards:
            if shard.chunks:
                part = arr[shard.first_chunk * k:(shard.first_chunk + shard.chunks) * k]
                self[shard.switch].load_params(job_id, part)

    def read_params(self, job: JobSpec | int, as_float: bool = True, size: int | None = None,
                    param_frac_bits: int = 16) -> npt.NDArray[np.float32] | npt.NDArray[np.int32]:
        """The whole vector, shards concatenated (``size`` elements, default all chunks);
        float32 with the job's ``param_frac_bits`` unless ``as_float`` is False."""
        job_id, frac = (job.job_id, job.param_frac_bits) if isinstance(job, JobSpec) else (job, param_frac_bits)
        plan = self._plan(job_id)
        parts = [self[s.switch].read_params(job_id) for s in plan.shards if s.chunks]
        raw = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        raw = raw[:size] if size is not None else raw
        return dequantize(raw, frac) if as_float else raw
