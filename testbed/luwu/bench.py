"""Benchmark: step time, bytes per worker and memory of DDP+gloo, DDP+innet hook and LuWu mode.

    innet bench luwu [--workers 2 4 8] [--steps 20] [--out results/]
    flock /work/notes/mininet.lock innet bench luwu --mininet --bw 20 ...

On the loopback testbed (``innet-switch`` UDP ports on 127.0.0.1; one optimizer node) or, with
``--mininet`` (root), the Mininet star with ``--bw`` Mbit/s host links (HTB); the
MLP of ``innet.testbed.luwu.train`` on digits, for each N: DDP + gloo, DDP + innet hook, LuWu
with layer-wise overlap and LuWu serialized (push after backward, pull before forward: the
baseline the overlap is measured against). Prints a table and writes
``bench_luwu-<stamp>.json`` and ``.png``. Step times are means over steps after the first two
(warm-up). Bytes per worker per step: innet from the agent's frame counters (frames x frame
size, both directions); gloo from the ring's theory (2(N-1)/N of the gradient each way),
since loopback has no per-worker interface to count; on Mininet every mode's bytes are also
counted on the workers' links (``wire_bytes_per_worker_step``, start-up included). Overlap: the communication thread's
busy time per step, and (overlapped) the time forward waited for a pull in ``take`` against
the rest of the step (compute); the serialized mode's step is compute + communication.

A mode that fails (e.g. a worker missing its chunk deadline on an overloaded machine) is a row
with its ``errors`` (process -> log tail) and no numbers; the other rows still run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from innet.testbed.core.machine import describe as machine, switch_description
from innet.testbed.core.bounds import INNET_FRAME_OVERHEAD
from innet.testbed.core.testbed import Testbed, TestbedError, TestbedOptions
from innet.testbed.backends.loopback import LoopbackTestbed
from innet.testbed.luwu.run import RunConfig, RunResult, luwu_star, run_training
from innet.testbed.core.machine import load_average
from innet.testbed.core.topology import Link

MODES = {"ddp-gloo": ("ddp-gloo", True), "ddp-innet": ("ddp-innet", True), "luwu": ("luwu", True),
         "luwu-serialized": ("luwu", False)}
"""CLI name -> (run mode, overlap)."""


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def row_of(result: RunResult, workers: int, overlap: bool, steps: int, k: int) -> dict[str, Any]:
    """One table row: what ``result`` measured, averaged over the workers."""
    name = result.mode + ("" if overlap else " (serialized)")
    finals = result.finals
    row: dict[str, Any] = {"mode": name, "workers": workers, "errors": result.errors, "seconds": result.seconds}
    if len(finals) != workers:
        row["failed"] = f"{len(finals)} of {workers} workers finished"
        return row
    params = finals[0]["params"]
    frame = INNET_FRAME_OVERHEAD + 4 * k
    if result.mode == "ddp-gloo":
        per_step = 2 * 2 * (workers - 1) / workers * 4 * params  # ring, both directions
    else:
        per_step = _mean([(f["agent_stats"].get("sent", 0) + f["agent_stats"].get("results", 0)
                           + f["agent_stats"].get("statuses", 0)) * frame / steps for f in finals])
    row.update({"params": params, "step_ms": 1000 * _mean([_mean(f["step_seconds"][2:]) for f in finals]),
                "bytes_per_worker_step": per_step,
                "worker_rss_mb": _mean([f["rss_bytes"] for f in finals]) / 2**20,
                "worker_tensor_bytes_peak": int(_mean([f["tensor_bytes_peak"] for f in finals])),
                "accuracy": _mean([f["accuracy"] for f in finals])})
    if result.mode == "luwu":
        comm = [(f["comm"]["push_seconds"] + f["comm"]["pull_seconds"]) / steps for f in finals]
        wait = [_mean(f.get("step_wait_seconds", [])[2:]) for f in finals]  # warm-up excluded, as step_ms
        row["worker_tensor_bytes_between_steps"] = max(f["tensor_bytes_between_steps"] for f in finals)
        row["comm_busy_ms_per_step"] = 1000 * _mean(comm)
        if overlap:  # serialized mode waits in wait_idle, not in take: no split there
            row["comm_wait_ms_per_step"] = 1000 * _mean(wait)
            row["compute_ms_per_step"] = row["step_ms"] - row["comm_wait_ms_per_step"]
        node = result.nodes[0] if result.nodes else {}
        row["node"] = {key: node.get(key) for key in ("rss_bytes", "bytes_on_disk", "bytes_state",
                                                     "bytes_working_set", "step", "seconds")}
    return row


def summary(rows: Sequence[dict[str, Any]]) -> dict[int, dict[str, float]]:
    """Per N: the overlap's speedup (serialized LuWu step / overlapped LuWu step)."""
    out: dict[int, dict[str, float]] = {}
    for n in sorted({r["workers"] for r in rows}):
        by = {r["mode"]: r for r in rows if r["workers"] == n and "step_ms" in r}
        if "luwu" in by and "luwu (serialized)" in by:
            out[n] = {"overlap_speedup": by["luwu (serialized)"]["step_ms"] / by["luwu"]["step_ms"]}
    return out


def plot(doc: dict[str, Any], path: Path) -> Path | None:
    """Step time and bytes per worker against N, one line per mode; None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    axes[0].set_yscale("log")
    modes = list(dict.fromkeys(r["mode"] for r in doc["rows"]))
    on_link = all(r.get("wire_bytes_per_worker_step") is not None for r in doc["rows"] if "step_ms" in r)
    for mode in modes:
        rows = [r for r in doc["rows"] if r["mode"] == mode and "step_ms" in r]
        ns = [r["workers"] for r in rows]
        axes[0].plot(ns, [r["step_ms"] for r in rows], marker="o", label=mode)
        key = "wire_bytes_per_worker_step" if on_link else "bytes_per_worker_step"
        axes[1].plot(ns, [r[key] / 1e3 for r in rows], marker="o", label=mode)
        axes[2].plot(ns, [r["worker_tensor_bytes_peak"] / 1e3 for r in rows], marker="o", label=mode)
    bytes_label = "kB per worker per step (on the link)" if on_link else "kB per worker per step (gloo: theory)"
    for ax, label in zip(axes, ("ms per step", bytes_label, "worker tensor bytes at peak (kB)")):
        ax.set_xlabel("workers N")
        ax.set_ylabel(label)
        ax.set_xticks(sorted({r["workers"] for r in doc["rows"]}))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    m, s = doc["machine"], doc["settings"]
    fig.suptitle(f"{s['model']} on digits, batch {s['batch']}/worker, K={s['k']}, {s['nodes']} optimizer node; "
                 f"{doc['backend']}, {doc['switch']}; {m.get('cpu')} x{m.get('cores')}, "
                 f"load {doc['load_average_start']} -> {doc['load_average_end']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _testbed(n: int, executor: str, mininet: bool, bw_mbps: float | None) -> Testbed:
    options = TestbedOptions(switch_executor=executor)
    if not mininet:
        return LoopbackTestbed(luwu_star(n, 1), options)
    from innet.testbed.backends.mininet.net import MininetTestbed

    return MininetTestbed(luwu_star(n, 1, Link(bw_mbps=bw_mbps) if bw_mbps is not None else None), options)


def _wire(tb: Testbed, before: dict[str, tuple[int, int]] | None, n: int, steps: int) -> float | None:
    """Mean bytes (sent + received) per worker link per step since ``before``; None on loopback."""
    after = tb.wire_bytes()
    if before is None or after is None:
        return None
    hosts = tb.worker_hosts()[:n]
    return float(np.mean([sum(after[h]) - sum(before[h]) for h in hosts])) / steps


def run(workers: Sequence[int], steps: int, out: Path, executor: str = "auto",
        hidden: tuple[int, ...] = (128, 64), batch: int = 32, modes: Sequence[str] = tuple(MODES),
        mininet: bool = False, bw_mbps: float | None = None) -> dict[str, Any]:
    """Every mode at every N, on loopback or Mininet (host links at ``bw_mbps``, unshaped if None)."""
    rows = []
    load_start = load_average()
    for n in workers:
        with _testbed(n, executor, mininet, bw_mbps) as tb:
            for mode, overlap in (MODES[m] for m in modes):
                before = tb.wire_bytes()
                result = run_training(tb, RunConfig(mode=mode, workers=n, steps=steps, overlap=overlap,
                                                    lr=0.01, hidden=hidden, batch=batch, timeout=900))
                row = row_of(result, n, overlap, steps, tb.options.k)
                row["wire_bytes_per_worker_step"] = _wire(tb, before, n, steps)
                rows.append(row)
                if "step_ms" not in row:
                    print(f"N={n} {row['mode']:<22} FAILED: {row['failed']}; {sorted(row['errors'])}", flush=True)
                    continue
                print(f"N={n} {row['mode']:<22} {row['step_ms']:8.1f} ms/step  "
                      f"{row['bytes_per_worker_step'] / 1e3:8.1f} kB/worker/step  "
                      f"RSS {row['worker_rss_mb']:6.1f} MB  tensors {row['worker_tensor_bytes_peak'] / 1e3:7.1f} kB  "
                      f"acc {row['accuracy']:.3f}", flush=True)
    date = dt.datetime.now().isoformat(timespec="seconds")
    sizes = "-".join(str(x) for x in (64, *hidden, 10))
    backend = ("loopback" if not mininet else "mininet star, " + (f"{bw_mbps:g} Mbit/s host links (HTB)"
                                                                 if bw_mbps is not None else "unshaped veths"))
    doc = {"format": "innet-bench-luwu/2", "date": date, "machine": machine(), "backend": backend,
           "switch": switch_description(executor), "load_average_start": load_start,
           "load_average_end": load_average(),
           "settings": {"steps": steps, "batch": batch, "model": f"MLP {sizes}", "k": 64, "nodes": 1, "lr": 0.01},
           "rows": rows, "summary": summary(rows)}
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"bench_luwu-{date.replace(':', '').replace('-', '')}"
    path = stem.with_suffix(".json")
    path.write_text(json.dumps(doc, indent=1) + "\n")
    png = plot(doc, stem.with_suffix(".png"))
    print(f"wrote {path}" + (f" and {png}" if png else ""))
    return doc


def _check(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments, in one line; None when nothing is."""
    if args.bw is not None and not args.mininet:
        return f"--bw {args.bw:g}: link shaping needs --mininet (loopback links are not shaped)"
    if args.bw is not None and not 0 < args.bw <= 100_000:
        return f"--bw {args.bw:g}: must be > 0 and <= 100000 Mbit/s"
    if any(not 2 <= n <= 31 for n in args.workers):
        return (f"--workers {' '.join(map(str, args.workers))}: each must be within 2..31 (one member "
                "is the optimizer node, 32 at most)")
    if args.steps < 3:
        return f"--steps {args.steps}: must be >= 3 (the first two are warm-up)"
    if args.batch < 1:
        return f"--batch {args.batch}: must be >= 1"
    if any(w < 1 for w in args.hidden):
        return f"--hidden {' '.join(map(str, args.hidden))}: widths must be >= 1"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="innet bench luwu", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 64], help="hidden layer widths of the MLP")
    parser.add_argument("--batch", type=int, default=32, help="samples per worker per step")
    parser.add_argument("--modes", nargs="+", choices=tuple(MODES), default=list(MODES))
    parser.add_argument("--executor", choices=("auto", "native", "python"), default="auto",
                        help="the switch's packet executor (innet-switch --executor)")
    parser.add_argument("--mininet", action="store_true", help="on the Mininet star (root) instead of loopback")
    parser.add_argument("--bw", type=float, default=None, help="Mininet host link rate in Mbit/s (default unshaped)")
    parser.add_argument("--out", type=Path, default=Path("results"))
    args = parser.parse_args(argv)
    error = _check(args)
    if error:
        print(f"bench_luwu: {error}", file=sys.stderr)
        return 2
    try:
        run(args.workers, args.steps, args.out, args.executor, tuple(args.hidden), args.batch, args.modes,
            args.mininet, args.bw)
    except TestbedError as error:
        print(f"bench_luwu: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
