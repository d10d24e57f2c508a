"""One GPU of a rail testbed running the uniform all-to-all (``innet.host.rail.alltoall``).

    python -m innet.testbed.rail.alltoall_worker '<AllToAllPlan JSON>'

Opens its groups (HB domain and rail for ``two-step``, every GPU for ``direct``), then for
``repeats`` + 1 operations (the first is a warm-up): a barrier (an empty exchange in each
group), the timed all-to-all, and a byte-by-byte check of every received block. Prints one
JSON line: ``{"rank", "elements": pair_bytes, "times", "ok", "route"}``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from typing import Sequence

from innet.host.rail.alltoall import AllToAll
from innet.host.rail.hbdomain import HbConfig, HbError, HbGroup
from innet.plans import JsonPlan, worker_main

WORKER_MODULE = __name__
EXIT_HB = 4

Address = tuple[str, int]


@dataclass(frozen=True)
class AllToAllPlan(JsonPlan):
    x: int
    y: int
    domain: int
    gpu: int
    pair_bytes: int
    """D: bytes from every GPU to every other GPU."""
    route: str
    """``direct`` or ``two-step``."""
    hb_peers: tuple[Address, ...] = ()
    """two-step: HB address of every GPU of the domain, by gpu index."""
    rail_peers: tuple[Address, ...] = ()
    """two-step: NIC address of every GPU of the rail, by domain."""
    direct_peers: tuple[Address, ...] = ()
    """direct: the address to reach every GPU by, by global rank."""
    direct_bind: Address | None = None
    """direct: where this GPU listens."""
    repeats: int = 1
    deadline: float = 60.0
    salt: int = 0



def run(plan: AllToAllPlan) -> int:
    a2a = AllToAll(plan.x, plan.y, plan.domain, plan.gpu, plan.pair_bytes, plan.salt)
    if plan.route == "two-step":
        groups = [HbGroup(HbConfig(plan.gpu, plan.hb_peers, domain=f"hb{plan.domain + 1}", deadline=plan.deadline)),
                  HbGroup(HbConfig(plan.domain, plan.rail_peers, domain=f"rail{plan.gpu + 1}", deadline=plan.deadline))]
    else:
        groups = [HbGroup(HbConfig(a2a.rank, plan.direct_peers, domain="all", deadline=plan.deadline,
                                   bind=plan.direct_bind))]
    started: list[HbGroup] = []
    try:
        for g in groups:
            started.append(g.start())
        times, ok = [], True
        for i in range(plan.repeats + 1):
            for g in groups:
                g.exchange({}, "barrier")
            start = time.perf_counter()
            got = a2a.two_step(groups[0], groups[1]) if plan.route == "two-step" else a2a.direct(groups[0])
            elapsed = time.perf_counter() - start
            ok = ok and a2a.check(got)
            if i:
                times.append(elapsed)
        for g in groups:
            g.exchange({}, "barrier")  # nobody closes while a peer still reads
    finally:
        for g in started:
            g.close()
    print(json.dumps({"rank": a2a.rank, "elements": plan.pair_bytes, "times": times, "ok": ok,
                      "route": plan.route}), flush=True)
    return 0 if ok else 1


def _run_reporting(plan: AllToAllPlan) -> int:
    try:
        return run(plan)
    except HbError as error:
        print(f"alltoall_worker: {error}", file=sys.stderr, flush=True)
        return EXIT_HB


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(AllToAllPlan, _run_reporting, argv, WORKER_MODULE)


if __name__ == "__main__":
    sys.exit(main())
