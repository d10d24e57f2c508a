"""Benchmark: step time, bytes per worker and memory of DDP+gloo, DDP+innet hook and LuWu mode.

    python -m innet.testbed.bench_luwu [--workers 2 4] [--steps 20] [--out results/]

On the loopback testbed (``innet-switch`` UDP ports on 127.0.0.1; one optimizer node), the
MLP of ``innet.testbed.luwu_train`` on digits. Prints a table and writes
``bench_luwu-<stamp>.json``. Step times are means over steps after the first two (warm-up).
Bytes per worker per step: innet from the agent's frame counters (frames x frame size,
both directions); gloo from the ring's theory (2(N-1)/N of the gradient each way), since
loopback has no per-worker interface to count.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from innet.testbed.bench import machine
from innet.testbed.costmodel import INNET_FRAME_OVERHEAD
from innet.testbed.loopback import LoopbackTestbed
from innet.testbed.luwu import RunConfig, RunResult, luwu_star, run_training

MODES = (("ddp-gloo", True), ("ddp-innet", True), ("luwu", True), ("luwu", False))


def _row(result: RunResult, workers: int, overlap: bool, steps: int, k: int) -> dict[str, Any]:
    finals = result.finals
    times = [np.mean(f["step_seconds"][2:]) for f in finals]
    params = finals[0]["params"]
    frame = INNET_FRAME_OVERHEAD + 4 * k
    if result.mode == "ddp-gloo":
        per_step = 2 * 2 * (workers - 1) / workers * 4 * params  # ring, both directions
    else:
        per_step = float(np.mean([(f["agent_stats"].get("sent", 0) + f["agent_stats"].get("results", 0)
                                   + f["agent_stats"].get("statuses", 0)) * frame / steps for f in finals]))
    row = {"mode": result.mode + ("" if overlap else " (serialized)"), "workers": workers, "params": params,
           "step_ms": 1000 * float(np.mean(times)), "bytes_per_worker_step": per_step,
           "worker_rss_mb": float(np.mean([f["rss_bytes"] for f in finals])) / 2**20,
           "worker_tensor_bytes_peak": int(np.mean([f["tensor_bytes_peak"] for f in finals])),
           "accuracy": float(np.mean([f["accuracy"] for f in finals])), "errors": result.errors}
    if result.mode == "luwu":
        row["worker_tensor_bytes_between_steps"] = max(f["tensor_bytes_between_steps"] for f in finals)
        row["comm_wait_s"] = float(np.mean([f["comm"]["wait_seconds"] for f in finals]))
        row["node"] = {k: result.nodes[0].get(k) for k in ("rss_bytes", "bytes_on_disk", "bytes_state",
                                                         "bytes_working_set", "step", "seconds")}
    return row


def run(workers: Sequence[int], steps: int, out: Path) -> dict[str, Any]:
    rows = []
    for n in workers:
        with LoopbackTestbed(luwu_star(n, 1)) as tb:
            for mode, overlap in MODES:
                result = run_training(tb, RunConfig(mode=mode, workers=n, steps=steps, overlap=overlap,
                                                    lr=0.01, timeout=900))
                row = _row(result, n, overlap, steps, tb.options.k)
                rows.append(row)
                print(f"N={n} {row['mode']:<22} {row['step_ms']:8.1f} ms/step  "
                      f"{row['bytes_per_worker_step'] / 1e3:8.1f} kB/worker/step  "
                      f"RSS {row['worker_rss_mb']:6.1f} MB  tensors {row['worker_tensor_bytes_peak'] / 1e3:7.1f} kB  "
                      f"acc {row['accuracy']:.3f}", flush=True)
    date = dt.datetime.now().isoformat(timespec="seconds")
    doc = {"format": "innet-bench-luwu/1", "date": date, "machine": machine(), "backend": "loopback",
           "settings": {"steps": steps, "batch": 32, "model": "MLP 64-128-64-10", "k": 64, "nodes": 1},
           "rows": rows}
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"bench_luwu-{date.replace(':', '').replace('-', '')}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {path}")
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m innet.testbed.bench_luwu", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("results"))
    args = parser.parse_args(argv)
    if any(not 2 <= n <= 31 for n in args.workers) or args.steps < 3:
        print("bench_luwu: --workers must be within 2..31 and --steps >= 3", file=sys.stderr)
        return 2
    run(args.workers, args.steps, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
