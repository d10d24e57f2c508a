"""Top-k variants on the bench's slow-link cut, over several seeds, in one process.

``python -m innet.testbed.geo.seeds [--seeds 0,1,2,3,4,5] [--only topk,masked] [--steps 150]``
trains the toy GPT-2 of ``innet geo bench --task lm --lr 0.3`` with OP-Fence's cut on the
slow-link WAN (``--wan a-b:8:40,b-c:10:30,a-c:100:10``: stages a-c-b, cuts after operators 6
and 16, the c-b boundary compressed) as three threads with in-process links, so only the
arithmetic differs from the bench: for fixed top-k it gives the bench's losses to the last
digit, in seconds instead of minutes. Each variant is trained from every seed (parameters and
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

from innet.host.geo.channel import QueueChannel
from innet.host.geo.compress import CompressionConfig
from innet.host.geo.data import cross_entropy
from innet.host.geo.rad import StageRunner
from innet.host.geo.specs import GptSpec, LmSpec
from innet.host.geo.stage_process import build_model, build_task
from innet.host.geo.stages import Sgd, Stage, partition

CUTS = (6, 16)
"""OP-Fence's cut of the toy GPT-2 on the slow-link WAN (``innet geo plan --task lm --wan ...``)."""


def variants() -> dict[str, CompressionConfig | None]:
    """The compressions compared on the c-b boundary: the bench's own and what it replaced."""
    from innet.testbed.geo.config import GeoBenchConfig, link_compression

    topk = link_compression(GeoBenchConfig(task="lm"), "topk")
    assert topk is not None
    return {"dense": None, "int8": CompressionConfig("int8"), "topk": topk,
            "masked": replace(topk, gradients="masked", values="int8"),
            "int8-gradients": replace(topk, gradients="int8"),
            "8-of-32": replace(topk, ratio=0.25), "no-reference": replace(topk, reference="none")}


@dataclass(frozen=True)
class SeedRow:
    """One variant trained from one seed: final training and test loss, slow-link kB per step."""

    variant: str
    seed: int
    train_loss: float
    test_loss: float
    kb_per_step: float

    def to_json(self) -> dict[str, Any]:
        return {"name": self.variant, "seed": self.seed, "train_loss": self.train_loss, "test_loss": self.test_loss,
                "kB_per_step": self.kb_per_step}


def train(name: str, config: CompressionConfig | None, seed: int, steps: int = 150, lr: float = 0.3) -> SeedRow:
    """``steps`` of 4 x 32 sequences with the c-b boundary compressed by ``config``."""
    graph = build_model(GptSpec(vocab=32, d=32, heads=2, layers=2, seq=16))
    task = build_task(LmSpec(vocab=32, seq=16), 0)
    batches = task.batches(32, 4, seed)
    data = [next(batches) for _ in range(steps)]
    params = graph.init_params(seed)
    plans = partition(graph, CUTS)
    comp = [None, config]
    links = [QueueChannel.pair(f"boundary {b}") for b in range(len(plans) - 1)]
    last = len(plans) - 1
    runners = [StageRunner(Stage(graph, p, {n: params[n] for n in p.nodes if n in params}),
                           links[i - 1][1] if i > 0 else None, links[i][0] if i < last else None, Sgd(lr, 0.9),
                           compress_next=comp[i] if i < last else None,
                           compress_prev=comp[i - 1] if i > 0 else None, timeout=120.0,
                           receive_prev=comp[i - 1] if i > 0 else None) for i, p in enumerate(plans)]
    losses: list[float] = []
    logits: list[Any] = []
    errors: list[BaseException] = []

    def work(r: StageRunner) -> None:
        try:
            for s, mbs in enumerate(data):
                loss = r.step(s, mbs)
                if loss is not None:
                    losses.append(loss)
            out = r.evaluate(steps, task.test_feeds())
            if out is not None:
                logits.append(out)
        except BaseException as error:  # reported below
            errors.append(error)

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
    sent = links[1][0].sent_bytes + links[1][1].sent_bytes
    return SeedRow(name, seed, losses[-1], float(cross_entropy(logits[0], task.test_labels)), sent / steps / 1e3)


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds {text!r}: expected integers, e.g. 0,1,2") from None
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError(f"seeds {text!r}: expected integers >= 0")
    return seeds


def main(argv: Sequence[str] | None = None) -> int:
    known = variants()
    p = argparse.ArgumentParser(prog="python -m innet.testbed.geo.seeds",
                                description="top-k variants on the bench's slow-link cut, over seeds")
    p.add_argument("--seeds", type=_seeds, default=(0, 1, 2), help="seeds (default 0,1,2)")
    p.add_argument("--only", default=None, help=f"comma-separated variants of {', '.join(known)} (dense is added)")
    p.add_argument("--steps", type=int, default=150, help="training steps (default 150)")
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
                rows.append(train(name, known[name], seed, args.steps))
                print(json.dumps(rows[-1].to_json()), flush=True)
    dense = {r.seed: r for r in rows if r.variant == "dense"}
    for name in names[1:]:
        mine = [r for r in rows if r.variant == name]
        test = [r.test_loss - dense[r.seed].test_loss for r in mine]
        train_gap = [r.train_loss - dense[r.seed].train_loss for r in mine]
        print(f"{name:16} test gap {' '.join(f'{g:+.3f}' for g in test)} mean {sum(test) / len(test):+.3f}; "
              f"training mean {sum(train_gap) / len(train_gap):+.3f}; "
              f"{sum(r.kb_per_step for r in mine) / len(mine):.1f} kB/step")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"geo-topk-seeds-{time.strftime('%Y%m%dT%H%M%S')}.jsonl"
    path.write_text("".join(json.dumps(r.to_json()) + "\n" for r in rows))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
