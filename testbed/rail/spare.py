"""A spare HB domain taking over a failed one in a running rail job (docs/rail.md, "Failures").

    with RailTestbed(rail_only(domains=3, gpus_per_domain=2), options, backend="loopback", spares=1) as tb:
        out = run_digits_failover(tb, DigitsConfig(gpus=tb.gpus, steps=30), rank=1, kill_at=40)

:func:`run_digits_failover` trains the digits model like :func:`innet.testbed.rail.workloads.digits`, SIGKILLs
every GPU of the domain holding ``rank`` once rail 0's switch has completed ``kill_at``
chunks, and lets :func:`take_over` move the rank to the first spare domain: the state comes
from the switches (:mod:`innet.testbed.rail.failover`), the controller re-points the rank's
worker entry and multicast replica on every rail, the spare's GPUs start in the step the
others are in. The result is the training run plus the resume point and the recovery times
(:class:`~innet.testbed.rail.records.FailoverTimes`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from innet.controller.jobs import JobInfo
from innet.polling import PollTimeout, poll_until
from innet.testbed.core.testbed import TestbedError
from innet.testbed.rail.failover import FailoverError, RailState, ResumePoint, params_before, resume_point
from innet.testbed.rail.grid import rail_worker
from innet.testbed.rail import workloads
from innet.testbed.rail.records import FailoverTimes
from innet.testbed.rail.testbed import RailTestbed
from innet.testbed.rail.workloads import Procs, TrainingRun
from innet.testbed.rail.worker import WORKER_MODULE as RAIL_WORKER, TakeOrder

if TYPE_CHECKING:
    from innet.testbed.rail.digits import DigitsConfig


@dataclass(frozen=True)
class TakeOver:
    """What :func:`take_over` did."""

    rank: int
    failed_domain: int
    spare_domain: int
    point: ResumePoint
    procs: Procs
    read_s: float
    """Reading the switches' state and undoing the half-applied step."""
    reprogram_s: float
    """Re-pointing the rank on every rail switch."""


def _read_rails(tb: RailTestbed) -> list[tuple[RailState, JobInfo]]:
    """Every rail switch's view of the running job, with the job entry it was read from."""
    job_id = tb.job.job_id
    out = []
    for rail in tb.grid.rails:
        node = tb.controller[rail]
        copies = node.copy_state(job_id)
        info = copies.info
        completions = node.completions(job_id)
        out.append((RailState(rail, info.param_chunks, info.slot_count, info.num_workers, info.epoch, completions,
                              copies.count, copies.bitmap, copies.epoch), info))
    return out


def rail_states(tb: RailTestbed) -> list[RailState]:
    """Every rail switch's view of the running job."""
    return [state for state, _ in _read_rails(tb)]


def spare_domain(tb: RailTestbed) -> int:
    """The first HB domain outside the job."""
    spares = [d for d in range(tb.grid.y) if d not in tb.active]
    if not spares:
        raise TestbedError(f"topology {tb.topology.name}: no spare HB domain (start the testbed with spares=1)")
    return spares[0]


@dataclass(frozen=True)
class Standby:
    """A spare domain's GPUs started with the job, waiting for a take-over order."""

    domain: int
    order: Path
    procs: Procs


def start_standby(tb: RailTestbed, digits: DigitsConfig, params: int, epoch: int,
                  timeout: float = 120.0) -> Standby:
    """Start the first spare domain's GPUs for the digits job's worker set attached at
    ``epoch``: their agents, HB domain and data come up now, so a take-over only has to tell
    them which rank to take."""
    domain = spare_domain(tb)
    order = tb.procs.dir / f"standby-{domain}.json"
    order.unlink(missing_ok=True)
    for g in range(tb.grid.x):
        Path(f"{order}.ready{g}").unlink(missing_ok=True)
    procs = tb.spawn_workers(RAIL_WORKER, "rail", tb.domain_plans(tb.grid.hosts[domain], 0, "digits", epoch,
                                                                  params=params, digits=digits,
                                                                  standby=str(order)))

    def ready() -> bool:
        for name, popen in procs:
            if popen.poll() is not None:
                raise TestbedError(f"standby {name} exited with status {popen.returncode}: {tb.procs.log_tail(name)}")
        return all(Path(f"{order}.ready{g}").exists() for g in range(tb.grid.x))

    try:
        poll_until(ready, timeout, what=f"standby domain {domain}")
    except PollTimeout as error:
        raise TestbedError(str(error)) from None
    return Standby(domain, order, procs)


def _give_order(path: Path, order: TakeOrder) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(order.to_json())
    tmp.rename(path)  # atomic: a GPU never reads half an order


def take_over(tb: RailTestbed, rank: int, digits: DigitsConfig, standby: Standby | None = None) -> TakeOver:
    """Move job rank ``rank`` (its domain's GPUs dead) to the first spare domain and start the
    spare's GPUs (or order the ``standby`` ones) in the step the switches are in (module
    docstring of :mod:`innet.testbed.rail.failover`). ``digits``: the run's configuration."""
    spare = spare_domain(tb) if standby is None else standby.domain
    if not 0 <= rank < len(tb.active):
        raise TestbedError(f"rank {rank} is outside the job's 0..{len(tb.active) - 1}")
    job_id = tb.job.job_id
    started = time.perf_counter()
    rails = _read_rails(tb)
    infos = [info for _, info in rails]
    if infos[0].mode != "momentum":
        raise FailoverError(f"job {job_id} runs {infos[0].mode}: a spare resumes from the switches' state only "
                            "for momentum jobs, whose momentum register undoes a half-applied step (run sgd as "
                            "momentum with beta 0)")
    point = resume_point([state for state, _ in rails])
    if point.step >= digits.steps:
        raise FailoverError(f"the domain of rank {rank} died after the run's last step ({digits.steps}): "
                            "nothing to take over (kill earlier or train longer)")
    k = tb.options.k
    shards = []
    for g, (rail, info) in enumerate(zip(tb.grid.rails, infos)):
        node = tb.controller[rail]
        shards.append(params_before(point, g, node.read_params(job_id), node.read_params(job_id, momentum=True),
                                    info.lr, info.lr_shift, k))
    params = np.concatenate(shards).astype(np.int32)
    read = time.perf_counter()
    failed = tb.active[rank]
    for g, rail in enumerate(tb.grid.rails):
        tb.controller.replace_worker(job_id, rail, rail_worker(tb.grid, spare, g, rank, tb.options.agent_port,
                                                               tb.switch_port))
    tb.active[rank] = spare
    reprogrammed = time.perf_counter()
    path = tb.procs.dir / f"resume-rank{rank}-step{point.step}.npy"
    np.save(path, params)
    if standby is not None:
        _give_order(standby.order, TakeOrder(rank, point.step, tuple(point.position(g) for g in range(tb.grid.x)),
                                                 str(path)))
        return TakeOver(rank, failed, spare, point, standby.procs, read - started, reprogrammed - read)
    plans = [(host, replace(plan, start_step=point.step, start_position=point.position(plan.gpu),
                            resume_params=str(path)))
             for host, plan in tb.rail_plans("digits", infos[0].epoch, params=params.size, digits=digits)
             if plan.domain == rank]
    procs = tb.spawn_workers(RAIL_WORKER, "rail", plans)
    return TakeOver(rank, failed, spare, point, procs, read - started, reprogrammed - read)


def _kill_domain(tb: RailTestbed, procs: Procs, domain: int) -> Procs:
    """SIGKILL the GPUs of ``domain``; the others."""
    hosts = {f"rail-{h}" for h in tb.grid.hosts[domain]}
    dead = [(name, p) for name, p in procs if name in hosts]
    for _, popen in dead:
        popen.kill()
    for name, popen in dead:
        popen.wait(timeout=30)
        tb.procs.forget(name)
    return [(name, p) for name, p in procs if name not in hosts]


@dataclass(frozen=True)
class FailoverRun:
    """A digits run in which a spare domain took a dead one's rank over."""

    run: TrainingRun
    """What every GPU and switch ended with (the spare's GPUs report the dead domain's ranks)."""
    failover: FailoverTimes


def run_digits_failover(tb: RailTestbed, config: DigitsConfig, rank: int, kill_at: int, settle: float = 0.2,
                        timeout: float = 300.0, warm: bool = False) -> FailoverRun:
    """Digits training (``config``: a ``DigitsConfig`` over the job's GPUs) in which the domain
    of ``rank`` dies once rail 0 completed ``kill_at`` chunks and a spare takes over
    (module docstring). ``settle``: seconds for the dead GPUs' last packets to land before
    the switches are read. ``warm``: the spare's GPUs are started with the job and wait
    (:func:`start_standby`); otherwise they start at the take-over."""
    initial = workloads.digits_job(tb, config)
    epoch = tb.attach()
    standby = start_standby(tb, config, initial.size, epoch) if warm else None
    procs = tb.spawn_rail("digits", epoch=epoch, params=initial.size, digits=config)
    job_id, rail0 = tb.job.job_id, tb.grid.rails[0]

    def reached() -> bool:
        for name, popen in procs:
            if popen.poll() is not None:
                raise TestbedError(f"digits training: {name} exited with status {popen.returncode} before the "
                                   f"failure point ({kill_at} completions on {rail0}): "
                                   f"{tb.procs.log_tail(name)}")
        return tb.controller[rail0].completions(job_id) >= kill_at

    try:
        poll_until(reached, timeout, interval=0.002, what=f"{kill_at} completions on {rail0}")
    except PollTimeout as error:
        raise TestbedError(str(error)) from None
    killed_at = time.time()
    survivors = _kill_domain(tb, procs, tb.active[rank])
    detected = time.time()
    time.sleep(settle)
    took = take_over(tb, rank, config, standby)
    spawned = time.time()
    out = workloads.digits_outputs(tb, survivors + took.procs, initial, timeout)
    spare_ranks = range(rank * tb.grid.x, (rank + 1) * tb.grid.x)  # global ranks of the domain's GPUs
    spare = [out.lines[r] for r in spare_ranks if r in out.lines]
    firsts = [line.time for g in spare for line in g.steps if line.step == took.point.step and line.time is not None]
    readies = [g.ready for g in spare if g.ready is not None]
    if len(firsts) != tb.grid.x or len(readies) != tb.grid.x:
        raise TestbedError(f"rank {rank}: the spare domain's GPUs reported {len(readies)} ready and {len(firsts)} "
                           f"step-{took.point.step} lines, expected {tb.grid.x} each; their step lines: "
                           f"{[line.to_json() for g in spare for line in g.steps][:6]}; "
                           f"ranks with lines {sorted(out.lines)}")
    first, ready = max(firsts), max(readies)
    witness = min(r for r in out.lines if r not in spare_ranks)
    times = [line.time for line in out.lines[witness].steps if line.time is not None]
    gaps = [b - a for a, b in zip(times, times[1:])]
    return FailoverRun(out, FailoverTimes(
        rank=rank, spare="warm" if warm else "cold", failed_domain=took.failed_domain,
        spare_domain=took.spare_domain, kill_at_completions=kill_at, resume_step=took.point.step,
        applied_chunks_of_step=took.point.applied_chunks, chunks_per_step=sum(r.chunks for r in took.point.rails),
        kill_to_reaped_s=detected - killed_at, settle_s=settle, read_state_s=took.read_s,
        reprogram_s=took.reprogram_s, spawn_s=spawned - detected - settle - took.read_s - took.reprogram_s,
        spare_ready_s=ready - spawned, spare_first_step_s=first - ready, recovery_s=first - killed_at,
        normal_step_s=float(np.median(gaps)) if gaps else None, slowest_step_s=max(gaps) if gaps else None))
