"""One innet worker process of the testbed: a host agent plus a timed allreduce loop.

    python -m innet.testbed.core.ina_worker '<WorkerPlan JSON>'

The testbed starts one per worker (in its Mininet host, or on loopback with the frame
tunnel). For each size it allreduces one float32 vector in place (``Agent.allreduce_into``, as
gloo's worker reduces one tensor in place) ``repeats`` times after a warm-up;
before each timed operation a one-chunk allreduce acts as a barrier (it completes only
when every worker has arrived), so the times compare with gloo's (which also starts
after a barrier). Rank r contributes ``r+1`` everywhere, so the sum is ``N(N+1)/2``;
``--exact`` uses ``allreduce_int`` with rank-dependent integers and checks every element
bit for bit. One JSON line per size goes to stdout, like ``innet.testbed.core.gloo``::

    {"rank": 0, "elements": 65536, "times": [...], "ok": true, "stats": {...}}

``stats`` holds the agent's cumulative protocol counters (warm-up, barriers and earlier
sizes included) plus ``timed_retransmitted``: the chunks this worker retransmitted during
the size's timed operations only (the change of its ``retransmitted`` counter across each
timed allreduce, summed over the ``repeats``).

When the switch cannot complete a chunk within ``chunk_deadline`` (a worker died, the
switch is gone), the process writes one line ``ina_worker rank R: aggregation failed:
<AggregationError text naming the missing workers>`` to stderr and exits with
:data:`EXIT_AGGREGATION`; a wrong sum exits with 1.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from innet import wire
from innet.host.agent.agent import Agent, AgentConfig
from innet.host.agent.aggregator import AggregationError, JobConfig, Timing
from innet.host.agent.transport import TransportConfig
from innet.testbed.core import ifstats
from innet.testbed.core.bounds import INNET_FRAME_OVERHEAD
from innet.plans import JsonPlan, worker_main

WORKER_MODULE = __name__
EXIT_AGGREGATION = 3
"""Exit status when an allreduce failed with ``AggregationError`` (its text is on stderr)."""


@dataclass(frozen=True)
class WorkerPlan(JsonPlan):
    """Everything one worker process needs (JSON on its command line)."""

    job: int
    """Job id."""
    rank: int
    """This worker's rank."""
    num_workers: int
    """Workers of the job."""
    window: int
    """Slots of the job (outstanding chunks)."""
    k: int
    """Values per packet."""
    transport: TransportConfig
    """The agent's transport to the switch (in this plan's JSON, the worker's argument, as its
    ``json_form``)."""
    sizes: tuple[int, ...]
    """Elements per allreduce, one series each."""
    epoch: int
    """The job epoch the worker set attached with (``Controller.attach``), the same for every rank."""
    repeats: int = 3
    """Timed operations per size (after one warm-up)."""
    exact: bool = False
    """Integer allreduce with an element-by-element check instead of float32."""
    chunk_deadline: float = 20.0
    """Seconds a chunk may stay incomplete before the agent gives up."""
    count_iface: str | None = None
    """Interface whose counters measure the bytes on the wire (``hI-eth0`` in Mininet); None:
    count the agent's frames instead (loopback)."""



def agent_config(plan: WorkerPlan, sum_bound: float | None = None) -> AgentConfig:
    return AgentConfig(JobConfig(job=plan.job, rank=plan.rank, num_workers=plan.num_workers,
                                 window=plan.window, k=plan.k, epoch=plan.epoch),
                       plan.transport, sum_bound=sum_bound,
                       timing=Timing(chunk_deadline=plan.chunk_deadline))


def exact_values(rank: int, size: int, repeat: int) -> np.ndarray:
    """Rank ``rank``'s integers for operation ``repeat`` of ``size`` (any rank can recompute them)."""
    return np.random.default_rng([rank, size, repeat]).integers(-(1 << 30), 1 << 30, size, dtype=np.int32)


def _agent_frames(stats: dict[str, int]) -> tuple[int, int]:
    """(frames sent, frames received) from the agent's cumulative counters."""
    received = sum(stats.get(k, 0) for k in ("results", "statuses", "late", "foreign"))
    return stats.get("sent", 0), received


def run(plan: WorkerPlan) -> int:
    n = plan.num_workers
    expected = n * (n + 1) / 2
    frame_bytes = INNET_FRAME_OVERHEAD + 4 * plan.k
    all_ok = True
    with Agent(agent_config(plan, sum_bound=float(n)), capacity=max(plan.sizes)) as agent:
        token = np.zeros(1, np.int32)
        agent.allreduce_int(token)
        for size in plan.sizes:
            times: list[float] = []
            retransmitted = 0
            wire = ifstats.ZERO
            ok = True
            vector = np.empty(size, np.float32)  # allocated once per size, as gloo's tensor
            for i in range(plan.repeats + 1):
                if plan.exact:
                    x = exact_values(plan.rank, size, i)
                    total = np.sum([exact_values(r, size, i).astype(np.int64) for r in range(n)], axis=0)
                    expect = ((total + (1 << 31)) % (1 << 32)) - (1 << 31)  # int32 wrap
                else:
                    vector.fill(plan.rank + 1)
                agent.allreduce_int(token)  # barrier: every worker starts together
                before = _counters(plan, agent)
                resent = _retransmitted(agent)
                start = time.perf_counter()
                if plan.exact:
                    got = agent.allreduce_int(x)
                    elapsed = time.perf_counter() - start
                    ok = ok and bool(np.array_equal(got.astype(np.int64), expect))
                else:
                    agent.allreduce_into(vector, vector)  # in place, as gloo's all_reduce
                    elapsed = time.perf_counter() - start
                    ok = ok and _all_near(vector, expected, 1e-3 * n)
                resent = _retransmitted(agent) - resent
                agent.allreduce_int(token)  # barrier: late retransmissions of this operation settle
                after = _counters(plan, agent)
                if i > 0:
                    times.append(elapsed)
                    retransmitted += resent
                    wire = wire + (after - before)
            all_ok = all_ok and ok
            ops = max(1, plan.repeats)
            # The window holds the operation and the trailing barrier (one frame each way): subtract it.
            wire = wire - ifstats.IfCounters(ops * frame_bytes, ops, ops * frame_bytes, ops)
            stats = {**(agent.last.stats if agent.last is not None else {}),
                     "timed_retransmitted": retransmitted}
            print(json.dumps({"rank": plan.rank, "elements": size, "times": times, "ok": ok, "stats": stats,
                              "wire": {k: v / ops for k, v in asdict(wire).items()},
                              "wire_source": plan.count_iface or "agent"}), flush=True)
    return 0 if all_ok else 1


def _all_near(vector: np.ndarray, expected: float, atol: float) -> bool:
    """Every value of ``vector`` within ``atol`` of ``expected``, checked in place (the vector
    is refilled before the next operation): no temporaries the size of the vector while the
    other workers may still be running."""
    np.subtract(vector, np.float32(expected), out=vector)
    np.abs(vector, out=vector)
    return bool(vector.max(initial=0.0) <= atol)


def _retransmitted(agent: Agent) -> int:
    """The agent's cumulative count of retransmitted chunks (as of its last operation)."""
    return agent.last.stats.get("retransmitted", 0) if agent.last is not None else 0


def _counters(plan: WorkerPlan, agent: Agent) -> ifstats.IfCounters:
    if plan.count_iface is not None:
        return ifstats.read(plan.count_iface)
    frame_bytes = INNET_FRAME_OVERHEAD + 4 * plan.k
    sent, received = _agent_frames(agent.last.stats if agent.last is not None else {})
    return ifstats.IfCounters(received * frame_bytes, received, sent * frame_bytes, sent)


def _run_reporting(plan: WorkerPlan) -> int:
    try:
        return run(plan)
    except AggregationError as error:
        print(f"ina_worker rank {plan.rank}: aggregation failed: {error}", file=sys.stderr, flush=True)
        return EXIT_AGGREGATION


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(WorkerPlan, _run_reporting, argv, WORKER_MODULE)


if __name__ == "__main__":
    sys.exit(main())
