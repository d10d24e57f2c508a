"""Why AdaTopK stalled on the language model: fixed top-k variants on the naive chain's first
boundary, in one process (threads as sites, no WAN shaping), so only the arithmetic differs.

``python -m innet.testbed.geo.ablation [--ratio 0.08] [--steps 100] [--seeds 1]`` trains the
toy GPT-2 of ``innet geo bench --task lm`` (vocabulary 32, width 32, 2 blocks, 16 tokens; 4 x 32
sequences per step, SGD lr 0.3 momentum 0.9, the naive 3-stage cut) with the boundary between
stage 0 and 1 compressed per variant (dense; activations and/or gradients top-k at ``ratio``;
per-row activation top-k; dense warm-up; int8 per row on activations and/or gradients), prints
test accuracy and loss per variant and saves JSON. 0.08 is the ratio AdaTopK chose on that link
in the loopback benchmark (docs/geo.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from innet.host.geo.compress import CompressionConfig
from innet.host.geo.data import LmTask, accuracy, cross_entropy
from innet.host.geo.graph import gpt, run_forward
from innet.host.geo.rad import run_threads
from innet.host.geo.stages import Sgd, even_cuts


@dataclass(frozen=True)
class Variant:
    name: str
    fwd: CompressionConfig | None
    """How the activations cross the boundary (None: dense)."""
    bwd: CompressionConfig | None
    """... the gradients."""


def variants(ratio: float) -> list[Variant]:
    top = CompressionConfig("topk", ratio=ratio)
    warm = replace(top, warmup_steps=20)
    int8 = CompressionConfig("int8")  # int8 per row, whatever the ratio (top-k mode refuses int8 activations)
    return [Variant("dense", None, None),
            Variant("activations + gradients", top, top),
            Variant("activations only", top, None),
            Variant("gradients only", None, top),
            Variant("activations per row + gradients", replace(top, row_topk=True), top),
            Variant("both + 20 dense warm-up steps", warm, warm),
            Variant("both per row + 20 warm-up steps", replace(warm, row_topk=True), warm),
            Variant("activations int8 + gradients", int8, top),
            Variant("activations int8 only", int8, None),
            Variant("activations int8 + gradients int8", int8, replace(top, gradients="int8")),
            Variant("gradients int8 only", None, replace(top, gradients="int8"))]


@dataclass(frozen=True)
class AblationRow:
    """One variant trained from one seed: test accuracy and loss after the steps, wall seconds."""

    variant: str
    seed: int
    accuracy: float
    test_loss: float
    wall_s: float

    def to_json(self) -> dict[str, Any]:
        """The saved row (``geo-ablation-*.json``)."""
        return {"variant": self.variant, "seed": self.seed, "accuracy": self.accuracy, "test_loss": self.test_loss,
                "wall_s": self.wall_s}


def train(variant: Variant, steps: int, seed: int) -> AblationRow:
    graph = gpt(32, 32, 2, 2, 16)
    task = LmTask.make(32, 16, seed=0)
    batches = task.batches(32, 4, 1000 + seed)
    start = time.perf_counter()
    result = run_threads(graph, even_cuts(graph, 3), graph.init_params(seed), [next(batches) for _ in range(steps)],
                         Sgd(0.3, 0.9), compression=[variant.fwd, None], compression_bwd=[variant.bwd, None],
                         timeout=600.0)
    values = dict(task.test_feeds())
    run_forward(graph.nodes, values, result.params)
    logits = values[graph.node(graph.loss).inputs[0]]
    return AblationRow(variant.name, seed, accuracy(logits, task.test_labels),
                       cross_entropy(logits, task.test_labels), time.perf_counter() - start)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m innet.testbed.geo.ablation",
                                description="top-k variants on the language model's naive boundary")
    p.add_argument("--ratio", type=float, default=0.08)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--only", default=None, help="comma-separated variant names")
    p.add_argument("--out", type=Path, default=Path("results"))
    args = p.parse_args(argv)
    if not 0 < args.ratio <= 1 or args.steps < 1 or args.seeds < 1:
        print("ablation: ratio must be within (0, 1], steps and seeds >= 1", file=sys.stderr)
        return 2
    from threadpoolctl import threadpool_limits

    chosen = [v for v in variants(args.ratio) if args.only is None or v.name in args.only.split(",")]
    rows: list[AblationRow] = []
    print(f"{'variant':34} {'seed':>4} {'acc':>6} {'loss':>7} {'s':>6}")
    with threadpool_limits(1):
        for v in chosen:
            for seed in range(args.seeds):
                r = train(v, args.steps, seed)
                rows.append(r)
                print(f"{v.name:34} {seed:4} {r.accuracy:6.3f} {r.test_loss:7.3f} {r.wall_s:6.1f}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"geo-ablation-{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps({"ratio": args.ratio, "steps": args.steps, "rows": [r.to_json() for r in rows]},
                                     indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
