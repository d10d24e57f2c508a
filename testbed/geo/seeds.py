"""Top-k variants on the bench's slow-link cut, over several seeds, in one process.

``python -m innet.testbed.geo.seeds [--seeds 0,1,2,3,4,5] [--only topk,masked] [--steps 150]``
trains the toy GPT-2 of ``innet geo bench --task lm --lr 0.3`` with OP-Fence's cut on the
slow-link WAN (``--wan a-b:8:40,b-c:10:30,a-c:100:10``: stages a-c-b, cuts after operators 6
and 16, the c-b boundary compressed) as three threads with in-process links, so only the
arithmetic differs from the bench: for fixed top-k it gives the bench's losses to the last
digit, in seconds instead of minutes. The links and the stages' compute run in virtual time
(``innet.testbed.geo.virtual``): the slow-link WAN's rates and delays on the two boundaries
and the compute per microbatch measured on the Mininet sites, so AdaTopK's ratio follows a
modelled link, the same on any machine (``--wan default``: the default WAN's faster links on
the same cut; ``--rate-change STEP:MBPS``: the compressed link's rate from a step on). Each variant is trained from every seed (parameters and
data order, as ``--seed``); test loss is evaluated as the stages do it (top-k applied at
inference). Prints a JSON line per run and the gaps to dense per variant; the per-seed spread
of a single run is several hundredths, so compare means (docs/geo.md, *Top-k that converges*).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from innet.host.geo.channel import LinkShape, QueueChannel
from innet.host.geo.compress import CompressionConfig
from innet.host.geo.data import cross_entropy
from innet.host.geo.rad import StageRunner
from innet.host.geo.specs import GptSpec, LmSpec
from innet.host.geo.stage_process import build_model, build_task
from innet.host.geo.stages import Sgd, partition
from innet.testbed.geo.virtual import TimedStage, VirtualClock, VirtualLink

CUTS = (6, 16)
"""OP-Fence's cut of the toy GPT-2 on the slow-link WAN (``innet geo plan --task lm --wan ...``)."""
WANS = {"slow": (LinkShape(100.0, 10.0), LinkShape(10.0, 30.0)),
        "default": (LinkShape(1000.0, 2.0), LinkShape(100.0, 10.0))}
"""The two boundaries' links (a-c, then the compressed c-b) of the slow-link WAN
``a-b:8:40,b-c:10:30,a-c:100:10`` and of the default WAN (b-c 100 Mbit/s, a-c 1 Gbit/s)."""
COMPUTE_S = (0.00225, 0.0129, 0.0108)
"""Modelled forward (and backward) time per microbatch of stages a, c, b: half the compute per
microbatch measured on the Mininet sites (4.5, 25.8, 21.6 ms forward + backward, docs/geo.md)."""


def variants() -> dict[str, CompressionConfig | None]:
    """The compressions compared on the c-b boundary: the bench's own and what it replaced."""
    from innet.testbed.geo.config import GeoBenchConfig, link_compression

    topk = link_compression(GeoBenchConfig(task="lm"), "topk")
    assert topk is not None
    adatopk = link_compression(GeoBenchConfig(task="lm"), "adatopk")
    assert adatopk is not None
    return {"dense": None, "int8": CompressionConfig("int8"), "topk": topk, "adatopk": adatopk,
            "adatopk-capped": replace(adatopk, max_ratio=topk.ratio),
            "masked": replace(topk, gradients="masked", values="int8"),
            "int8-gradients": replace(topk, gradients="int8"),
            "8-of-32": replace(topk, ratio=0.25), "16-of-32": replace(topk, ratio=0.5),
            "31-of-32": replace(topk, ratio=31 / 32), "no-reference": replace(topk, reference="none")}


@dataclass(frozen=True)
class SeedRow:
    """One variant trained from one seed: final training and test loss, slow-link kB per step."""

    variant: str
    seed: int
    train_loss: float
    test_loss: float
    kb_per_step: float
    ratios: tuple[float, ...] = ()
    """The compressed link's forward ratio per step (mean over microbatches)."""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.variant, "seed": self.seed, "train_loss": self.train_loss, "test_loss": self.test_loss,
                "kB_per_step": self.kb_per_step, "ratio_per_step": list(self.ratios)}


def train(name: str, config: CompressionConfig | None, seed: int, steps: int = 150, lr: float = 0.3,
          wan: str = "slow", changes: dict[int, float] | None = None) -> SeedRow:
    """``steps`` of 4 x 32 sequences with the c-b boundary compressed by ``config``, the links
    of ``WANS[wan]`` in virtual time, the c-b rate set to ``changes[s]`` Mbit/s before step s."""
    graph = build_model(GptSpec(vocab=32, d=32, heads=2, layers=2, seq=16))
    task = build_task(LmSpec(vocab=32, seq=16), 0)
    batches = task.batches(32, 4, seed)
    data = [next(batches) for _ in range(steps)]
    params = graph.init_params(seed)
    plans = partition(graph, CUTS)
    comp = [None, config]
    clocks = [VirtualClock() for _ in plans]
    shapes = WANS[wan]
    links = []
    for b in range(len(plans) - 1):
        x, y = QueueChannel.pair(f"boundary {b}")
        links.append((VirtualLink(x, clocks[b], shapes[b]), VirtualLink(y, clocks[b + 1], shapes[b])))
    last = len(plans) - 1
    runners = [StageRunner(TimedStage(graph, p, {n: params[n] for n in p.nodes if n in params}, clocks[i],
                                      COMPUTE_S[i]),
                           links[i - 1][1] if i > 0 else None, links[i][0] if i < last else None, Sgd(lr, 0.9),
                           compress_next=comp[i] if i < last else None,
                           compress_prev=comp[i - 1] if i > 0 else None, timeout=120.0,
                           receive_prev=comp[i - 1] if i > 0 else None, clock=clocks[i], timer=clocks[i])
               for i, p in enumerate(plans)]
    losses: list[float] = []
    logits: list[Any] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(runners))
    probed: list[int] = []

    def work(r: StageRunner) -> None:
        try:
            r.probe()
            barrier.wait(120.0)
            if r.index == 0:
                probed.append(links[1][0].sent_bytes + links[1][1].sent_bytes)
            for s, mbs in enumerate(data):
                if changes:  # every stage between steps: the rate changes between messages
                    barrier.wait(120.0)
                    if r.index == 0 and s in changes:
                        for end in links[1]:
                            end.shape = LinkShape(changes[s], end.shape.delay_ms)
                    barrier.wait(120.0)
                loss = r.step(s, mbs)
                if loss is not None:
                    losses.append(loss)
            out = r.evaluate(steps, task.test_feeds())
            if out is not None:
                logits.append(out)
        except BaseException as error:  # reported below
            errors.append(error)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(r,), name=f"stage {r.index}") for r in runners]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, z in links:
        a.close()
        z.close()
    if errors:
        raise errors[0]
    sent = links[1][0].sent_bytes + links[1][1].sent_bytes - probed[0]
    ratios = runners[1].stats.ratios_next if config is not None else []
    per_step = len(ratios) // steps if ratios else 0
    return SeedRow(name, seed, losses[-1], float(cross_entropy(logits[0], task.test_labels)), sent / steps / 1e3,
                   tuple(sum(ratios[i * per_step:(i + 1) * per_step]) / per_step for i in range(steps))
                   if per_step else ())


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds {text!r}: expected integers, e.g. 0,1,2") from None
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError(f"seeds {text!r}: expected integers >= 0")
    return seeds


def _change(text: str) -> tuple[int, float]:
    try:
        step, mbps = text.split(":")
        change = int(step), float(mbps)
    except ValueError:
        raise argparse.ArgumentTypeError(f"rate change {text!r}: expected STEP:MBPS, e.g. 50:100") from None
    if change[0] < 0 or not change[1] > 0:
        raise argparse.ArgumentTypeError(f"rate change {text!r}: expected a step >= 0 and a rate > 0")
    return change


def _ratio_range(rows: list[SeedRow]) -> str:
    """The ratios the compressed link's forward messages used, over the rows' steps."""
    ratios = [x for r in rows for x in r.ratios]
    return f"; ratio {min(ratios):.2f}-{max(ratios):.2f} (mean {sum(ratios) / len(ratios):.2f})" if ratios else ""


def main(argv: Sequence[str] | None = None) -> int:
    known = variants()
    p = argparse.ArgumentParser(prog="python -m innet.testbed.geo.seeds",
                                description="top-k variants on the bench's slow-link cut, over seeds")
    p.add_argument("--seeds", type=_seeds, default=(0, 1, 2), help="seeds (default 0,1,2)")
    p.add_argument("--only", default=None, help=f"comma-separated variants of {', '.join(known)} (dense is added)")
    p.add_argument("--steps", type=int, default=150, help="training steps (default 150)")
    p.add_argument("--wan", choices=sorted(WANS), default="slow",
                   help="the boundaries' links: the slow-link WAN (default) or the default WAN's")
    p.add_argument("--rate-change", type=_change, action="append", default=[], metavar="STEP:MBPS",
                   help="the compressed link's rate from STEP on (repeatable)")
    p.add_argument("--out", type=Path, default=Path("results"), help="directory of the JSON lines (default results)")
    args = p.parse_args(argv)
    names = list(known) if args.only is None else ["dense", *[n for n in args.only.split(",") if n != "dense"]]
    unknown = [n for n in names if n not in known]
    if unknown or args.steps < 1:
        print(f"seeds: {'unknown variant ' + repr(unknown[0]) if unknown else 'steps must be >= 1'} "
              f"(variants: {', '.join(known)})", file=sys.stderr)
        return 2
    from threadpoolctl import threadpool_limits

    rows: list[SeedRow] = []
    with threadpool_limits(1):
        for name in names:
            for seed in args.seeds:
                rows.append(train(name, known[name], seed, args.steps, wan=args.wan,
                                  changes=dict(args.rate_change)))
                print(json.dumps(rows[-1].to_json()), flush=True)
    dense = {r.seed: r for r in rows if r.variant == "dense"}
    for name in names[1:]:
        mine = [r for r in rows if r.variant == name]
        test = [r.test_loss - dense[r.seed].test_loss for r in mine]
        train_gap = [r.train_loss - dense[r.seed].train_loss for r in mine]
        print(f"{name:16} test gap {' '.join(f'{g:+.3f}' for g in test)} mean {sum(test) / len(test):+.3f}; "
              f"training mean {sum(train_gap) / len(train_gap):+.3f}; "
              f"{sum(r.kb_per_step for r in mine) / len(mine):.1f} kB/step{_ratio_range(mine)}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"geo-topk-seeds-{time.strftime('%Y%m%dT%H%M%S')}.jsonl"
    path.write_text("".join(json.dumps(r.to_json()) + "\n" for r in rows))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
