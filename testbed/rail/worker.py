"""One GPU of a rail testbed: hierarchical allreduce or training steps, through its rail switch.

    python -m innet.testbed.rail.worker '<RailPlan JSON>'

Each step of the hierarchical collective (docs/rail.md):

1. reduce-scatter inside the HB domain (``innet.host.rail.hbdomain``, TCP over the HB fabric):
   GPU ``g`` ends with the domain's wrapping int32 sum of shard ``g``;
2. in-network aggregation of shard ``g`` on rail switch ``g`` across the ``y`` domains (a host
   agent, ``innet.host.agent.agent``): the sum (``sum`` jobs) or the parameters after the
   switch's optimizer step (``sgd``/``momentum`` jobs);
3. all-gather inside the HB domain: every GPU has the whole vector.

With ``collective = "ring"`` step 2 is host-based instead (NCCL's hierarchical ring): the
``y`` GPUs of rail ``g`` reduce-scatter and all-gather shard ``g`` among themselves over TCP
through the rail switch (``rail_peers``: their NIC addresses), the baseline hierarchical INA
is measured against; the rail switches only forward.

``allreduce`` plans time ``sizes`` like ``ina_worker`` (a global barrier before each timed
operation: the rail's one-chunk allreduce, then an empty HB exchange) and check every
element against the wrapping sum of every GPU's integers (``ina_worker.exact_values`` of
the GPU's global rank). ``train`` plans push ``steps`` integer gradients
(:func:`train_gradient`) and print the final int32 parameters.

A rail switch that does not answer within ``chunk_deadline`` ends the process with
``EXIT_AGGREGATION`` and one stderr line naming the rail switch; a silent HB peer with
``EXIT_HB`` naming it.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from innet.host.agent.agent import Agent, AgentConfig
from innet.host.rail.hbdomain import HbConfig, HbError, HbGroup
from innet.host.agent.aggregator import AggregationError, JobConfig, Timing
from innet.testbed.core.ina_worker import EXIT_AGGREGATION, exact_values
from innet.host.agent.transport import TransportConfig
from innet.testbed.rail.digits import DigitsConfig
from innet.testbed.rail.grid import shard_bounds
from innet.plans import JsonPlan, worker_main

WORKER_MODULE = __name__
COLLECTIVES = ("ina", "ring")
EXIT_HB = 4
"""Exit status when an HB-domain exchange failed (its text is on stderr)."""


@dataclass(frozen=True)
class RailPlan(JsonPlan):
    """Everything one GPU's process needs (JSON on its command line)."""

    job: int
    """Job id of the hierarchical job (the same on every rail switch)."""
    domain: int
    """d: this GPU's HB domain, 0-based (its rank in the rail's job)."""
    gpu: int
    """g: this GPU's index in its domain, 0-based (its rail)."""
    x: int
    """GPUs per domain (rails)."""
    y: int
    """Domains (workers per rail job)."""
    window: int
    k: int
    transport: TransportConfig
    """The agent's transport to the rail switch (in this plan's JSON, the worker's argument, as
    its ``json_form``)."""
    epoch: int
    """The epoch the controller attached the job at (the same on every rail)."""
    hb_peers: tuple[tuple[str, int], ...]
    """HB listen address of every GPU of the domain, by gpu index."""
    hb_names: tuple[str, ...]
    """Host names of the domain's GPUs (for messages)."""
    switch: str
    """The rail switch's name and address, for messages (``r2 (10.0.0.253)``)."""
    op: str = "allreduce"
    """``allreduce`` (sum job), ``train`` (sgd/momentum job, synthetic gradients) or ``digits``
    (sgd/momentum job, the digits model: ``innet.testbed.rail.digits``)."""
    sizes: tuple[int, ...] = ()
    repeats: int = 1
    steps: int = 0
    """``train``: gradient steps."""
    params: int = 0
    """``train``: elements of the parameter vector (param_chunks * K)."""
    chunk_deadline: float = 10.0
    hb_deadline: float = 20.0
    digits: DigitsConfig | None = None
    """``digits``: the model, data and optimizer to train."""
    collective: str = "ina"
    """Step 2: ``ina`` (the rail switch sums) or ``ring`` (host-based over the rail, TCP;
    ``allreduce`` only)."""
    rail_peers: tuple[tuple[str, int], ...] = ()
    """``ring``: listen address (NIC) of the GPU on this rail in every domain, by domain."""
    start_step: int = 0
    """``digits``: the first step to run (a spare taking a failed domain's rank over mid-run)."""
    start_position: int = 0
    """The agent's first stream position on the rail (``start_step`` times the chunks each
    step pushes there: the failed rank's stream continues)."""
    resume_params: str = ""
    """``digits`` from ``start_step``: an ``.npy`` file of the int32 parameters before it."""
    standby: str = ""
    """``digits`` on a spare domain started before any failure (``domain`` is a placeholder):
    the path of the file that will say which rank to take and from where (:class:`TakeOrder`);
    the GPU marks ``<standby>.ready<gpu>`` once its agent, HB domain and data are up."""
    standby_deadline: float = 600.0

    def __post_init__(self) -> None:
        if self.collective not in COLLECTIVES:
            raise ValueError(f"rail plan: collective {self.collective!r} is not one of {', '.join(COLLECTIVES)}")
        if self.collective == "ring" and (self.op != "allreduce" or len(self.rail_peers) != self.y):
            raise ValueError(f"rail plan: the ring collective runs op allreduce with one rail peer per domain "
                             f"({self.y}), got op {self.op!r} and {len(self.rail_peers)} peers")

    @property
    def rank(self) -> int:
        """Global rank (topology order: domain-major)."""
        return self.domain * self.x + self.gpu



def train_gradient(rank: int, step: int, size: int) -> npt.NDArray[np.int32]:
    """GPU ``rank``'s int32 gradient at ``step`` (small, so any rank can recompute the sum)."""
    return np.random.default_rng([rank, step, 7]).integers(-(1 << 16), 1 << 16, size, dtype=np.int32)


def wrapping_total(values: Sequence[npt.NDArray[np.int32]]) -> npt.NDArray[np.int32]:
    total = np.sum([v.astype(np.int64) for v in values], axis=0)
    return (((total + (1 << 31)) % (1 << 32)) - (1 << 31)).astype(np.int32)


class HierarchicalStep:
    """Reduce-scatter in the HB domain, INA on the rail switch (or the host ring over the rail),
    all-gather (module docstring)."""

    def __init__(self, plan: RailPlan, agent: Agent | None, hb: HbGroup, rail: HbGroup | None = None) -> None:
        self.plan, self.agent, self.hb, self.rail = plan, agent, hb, rail
        self.phases = {"reduce_scatter": 0.0, "ina": 0.0, "all_gather": 0.0}

    def barrier(self) -> None:
        if self.agent is not None:
            self.agent.allreduce_int(np.zeros(1, np.int32))
        else:
            assert self.rail is not None
            self.rail.exchange({}, "barrier")
        self.hb.exchange({}, "barrier")

    def _across_rail(self, part: npt.NDArray[np.int32], push: bool) -> npt.NDArray[np.int32]:
        """Step 2: the sum of ``part`` over the rail's domains (or the switch's parameters)."""
        if self.rail is not None:
            bounds = shard_bounds(part.size, 1, self.plan.y)
            return self.rail.all_gather(self.rail.reduce_scatter(part, bounds), bounds)
        assert self.agent is not None
        if push:
            self.agent.push_int(part)
            return self.agent.pull_int()
        return self.agent.allreduce_int(part)

    def run(self, vector: npt.NDArray[np.int32], push: bool = False) -> npt.NDArray[np.int32]:
        bounds = shard_bounds(vector.size, self.plan.k, self.plan.x)
        t0 = time.perf_counter()
        part = self.hb.reduce_scatter(vector, bounds)
        t1 = time.perf_counter()
        result = part if part.size == 0 else self._across_rail(part, push)
        t2 = time.perf_counter()
        full = self.hb.all_gather(result, bounds)
        t3 = time.perf_counter()
        for key, dt in zip(self.phases, (t1 - t0, t2 - t1, t3 - t2)):
            self.phases[key] += dt
        return full


def _allreduce(plan: RailPlan, step: HierarchicalStep) -> bool:
    n = plan.x * plan.y
    all_ok = True
    for size in plan.sizes:
        times: list[float] = []
        ok = True
        step.phases = dict.fromkeys(step.phases, 0.0)
        for i in range(plan.repeats + 1):
            x = exact_values(plan.rank, size, i)
            expect = wrapping_total([exact_values(r, size, i) for r in range(n)])
            step.barrier()
            start = time.perf_counter()
            got = step.run(x)
            elapsed = time.perf_counter() - start
            ok = ok and bool(np.array_equal(got, expect))
            if i == 0:
                step.phases = dict.fromkeys(step.phases, 0.0)
            else:
                times.append(elapsed)
        all_ok = all_ok and ok
        print(json.dumps({"rank": plan.rank, "elements": size, "times": times, "ok": ok,
                          "phases": {k: v / max(1, plan.repeats) for k, v in step.phases.items()},
                          "hb_bytes": step.hb.bytes_sent}), flush=True)
    return all_ok


def _train(plan: RailPlan, step: HierarchicalStep) -> bool:
    params = np.zeros(plan.params, np.int32)
    start = time.perf_counter()
    for s in range(plan.steps):
        params = step.run(train_gradient(plan.rank, s, plan.params), push=True)
    print(json.dumps({"rank": plan.rank, "final": params.tolist(), "seconds": time.perf_counter() - start}),
          flush=True)
    return True


@dataclass(frozen=True)
class TakeOrder(JsonPlan):
    """What a standby GPU is told when its domain replaces a failed one (or ``stop``)."""

    rank: int = 0
    """The job rank (domain) to take."""
    start_step: int = 0
    positions: tuple[int, ...] = ()
    """Each GPU's first stream position on its rail, by gpu index."""
    resume_params: str = ""
    stop: bool = False
    """Nothing failed: exit."""


def _await_order(plan: RailPlan, step: HierarchicalStep) -> RailPlan | None:
    """A standby GPU: mark ready, wait for the take-over order, take the rank (None: stop)."""
    from pathlib import Path

    go = Path(plan.standby)
    Path(f"{plan.standby}.ready{plan.gpu}").touch()
    deadline = time.monotonic() + plan.standby_deadline
    while not go.exists():
        if time.monotonic() > deadline:
            raise HbError(f"standby GPU {plan.gpu}: no take-over order ({go}) within {plan.standby_deadline} s")
        time.sleep(0.002)
    order = TakeOrder.from_json(go.read_text())
    if order.stop:
        return None
    plan = replace(plan, domain=order.rank, start_step=order.start_step, start_position=order.positions[plan.gpu],
                   resume_params=order.resume_params, standby="")
    assert step.agent is not None
    step.agent.take_rank(order.rank, plan.start_position)
    step.plan = plan
    return plan


def _digits(plan: RailPlan, step: HierarchicalStep) -> bool:
    from innet.host.training.model import load_digits_dataset
    from innet.testbed.rail.digits import worker_loop

    assert plan.digits is not None  # checked by _run_reporting
    config = plan.digits
    data = load_digits_dataset(seed=config.seed)
    if plan.standby:
        taken = _await_order(plan, step)
        if taken is None:
            return True
        plan = taken
    initial = np.load(plan.resume_params) if plan.resume_params else config.initial(plan.k)
    print(json.dumps({"rank": plan.rank, "ready": time.time()}), flush=True)  # agent, HB domain and data are up
    start = time.perf_counter()
    final = worker_loop(config, plan.rank, initial, lambda g: step.run(g, push=True),
                        lambda line: print(json.dumps(replace(line, time=time.time()).to_json()), flush=True),
                        start_step=plan.start_step, data=data)
    print(json.dumps({"rank": plan.rank, "final": final.tolist(), "seconds": time.perf_counter() - start}),
          flush=True)
    return True


OPS = {"allreduce": _allreduce, "train": _train, "digits": _digits}


def run(plan: RailPlan) -> int:
    job = JobConfig(job=plan.job, rank=plan.domain, num_workers=plan.y, window=plan.window, k=plan.k,
                    epoch=plan.epoch)
    config = AgentConfig(job, plan.transport, sum_bound=1.0,
                         timing=Timing(chunk_deadline=plan.chunk_deadline), start_position=plan.start_position)
    hb = HbConfig(rank=plan.gpu, peers=plan.hb_peers, names=plan.hb_names, domain=f"hb{plan.domain + 1}",
                  deadline=plan.hb_deadline)
    capacity = max([*plan.sizes, plan.params, 1])
    if plan.collective == "ring":
        rail = HbConfig(rank=plan.domain, peers=plan.rail_peers, domain=f"rail {plan.gpu + 1}",
                        deadline=plan.hb_deadline)
        with HbGroup(hb) as group, HbGroup(rail) as rail_group:
            ok = OPS[plan.op](plan, HierarchicalStep(plan, None, group, rail_group))
        return 0 if ok else 1
    with Agent(config, capacity=capacity) as agent, HbGroup(hb) as group:
        step = HierarchicalStep(plan, agent, group)
        ok = OPS[plan.op](plan, step)
    return 0 if ok else 1


def _run_reporting(plan: RailPlan) -> int:
    if plan.op not in OPS:
        print(f"rail_worker: op {plan.op!r} is not one of {', '.join(OPS)}", file=sys.stderr)
        return 2
    if plan.op == "digits" and plan.digits is None:
        print("rail_worker: op 'digits' needs the plan's digits config", file=sys.stderr)
        return 2
    try:
        return run(plan)
    except AggregationError as error:
        print(f"rail_worker rank {plan.rank}: rail switch {plan.switch}: aggregation failed: {error}",
              file=sys.stderr, flush=True)
        return EXIT_AGGREGATION
    except HbError as error:
        print(f"rail_worker rank {plan.rank}: {error}", file=sys.stderr, flush=True)
        return EXIT_HB


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(RailPlan, _run_reporting, argv, WORKER_MODULE)


if __name__ == "__main__":
    sys.exit(main())
