"""Benchmark: step time, bytes per worker and memory of DDP + gloo, DDP + innet hook, FSDP2 and LuWu.

    innet bench luwu [--workers 2,4,8] [--steps 20] [--model digits|wide] [--out results/]
    innet bench luwu --backend mininet --bw 100 --model wide --workers 4,8 \
        --modes ddp-gloo ddp-innet fsdp

On the loopback testbed (``innet-switch`` UDP ports on 127.0.0.1; one optimizer node) or, with
``--backend mininet`` (root), the Mininet star with ``--bw`` Mbit/s host links (HTB), every mode on
the same testbed, links, model, batches and seed: DDP + gloo (torch Adam), DDP + innet hook
(torch Adam), FSDP2 over gloo (``fully_shard``, torch Adam on the shards; optionally with CPU
offload), LuWu with layer-wise overlap and LuWu serialized (push after backward, pull before
forward: the baseline the overlap is measured against), and the bare collectives the DDP
modes stand on (``allreduce-gloo``, ``allreduce-innet``: one averaging allreduce of the
model's gradient size per step, no model; not run by default). The model: ``digits`` (the MLP
64-128-64-10 of the tests) or ``wide`` (MLP 1024-2048-2048-2048-10, 10.5 M parameters, on a
synthetic task generated in each process: ``innet.testbed.luwu.data``). K (values per innet
packet) is the largest whose frame fits the links' MTU unless ``-k`` is given, as ``innet bench``.

Prints a table and writes ``bench_luwu-<stamp>.json`` and ``.png``. Step time: per step the
slowest worker's, then the median and the 90th percentile over the ``--steps`` steps after
``--warmup`` warm-up steps. Bytes per worker per step: on Mininet each worker reads its own
link's counters (``/proc/net/dev`` of its namespace) over the timed steps, sent (up) and
received (down) separately, every mode alike; also, as a cross-check, innet from the agent's
frame counters (frames x frame size, whole run) and gloo from the collective's theory (ring
allreduce 2(N-1)/N of the gradient each way; FSDP 4(N-1)/N: all-gathers in forward and
backward, and a reduce-scatter that costs gloo an allreduce's bytes), since loopback has no per-worker interface to count. Memory: peak
RSS, and peak tensor bytes (parameters + gradients + Adam moments; FSDP: the local shards plus
twice the largest layer unsharded, the all-gathers in flight; LuWu: parameters materialized).
CPU: seconds per timed step of the trainers (every thread) and their agent processes, summed
over the workers, and of the switch process (over the whole mode, start-up included): on a
shared 2-core machine it tells a CPU-bound run from a link-bound one. Overlap: the
communication thread's busy time per step, and (overlapped) the time forward waited for a
pull in ``take`` against the rest of the step (compute).

A mode that fails (e.g. a worker missing its chunk deadline on an overloaded machine) is a row
with its ``errors`` (process -> log tail) and no numbers; the other rows still run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from innet.argtypes import (Reporter, add_backend, add_executor, add_out, add_values_per_packet, add_workers,
                            console, interrupted_partial)
from innet.testbed.core.machine import describe as machine, switch_description
from innet.testbed.core.bounds import INNET_FRAME_OVERHEAD
from innet.testbed.core.testbed import Testbed, TestbedError, TestbedOptions
from innet.testbed.backends.select import open_testbed as open_star
from innet.wire import IP_OVERHEAD, SUPPORTED_K, k_for_mtu, message_len
from innet.testbed.luwu.run import RunConfig, RunResult, luwu_star, run_training
from innet.testbed.luwu.data import MODELS, ModelShape
from innet.testbed.luwu.status import NodeStatus
from innet.testbed.luwu.records import (NODE_STATUS_KEYS, HookComm, HookSplit, LinkBytes, LuwuBench,
                                        LuwuBenchSettings, LuwuComm, LuwuOverlap, ModeContext, ModeRow, StepMeasures,
                                        TrainerFinal)
from innet.testbed.core.machine import load_average
from innet.testbed.core.topology import Link

MODES = {"ddp-gloo": ("ddp-gloo", True, None), "ddp-innet": ("ddp-innet", True, None), "fsdp": ("fsdp", True, None),
         "fsdp-offload": ("fsdp-offload", True, None), "luwu": ("luwu", True, None),
         "luwu-one-job": ("luwu", True, False), "luwu-serialized": ("luwu", False, None),
         "allreduce-gloo": ("allreduce-gloo", True, None), "allreduce-innet": ("allreduce-innet", True, None)}
"""CLI name -> (run mode, overlap, duplex). ``luwu`` is duplex where the testbed allows it
(Mininet: pulls on a second job, ``RunConfig.duplex``); ``luwu-one-job`` pushes and pulls on one."""
DEFAULT_MODES = ("ddp-gloo", "ddp-innet", "fsdp", "luwu", "luwu-serialized")
"""What runs without ``--modes`` (fsdp-offload is optional: on a CPU-only host it only copies)."""
GLOO_THEORY = {"ddp-gloo": 2, "fsdp": 4, "fsdp-offload": 4, "allreduce-gloo": 2}
"""Mode -> gloo collectives' volume per direction in units of (N-1)/N x 4P bytes. FSDP2: two
all-gathers of the parameters (forward, backward) and the gradients' reduce-scatter, which
gloo carries as much as a ring allreduce (measured on the links: 4(N-1)/N, not 3)."""


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def step_times(finals: Sequence[TrainerFinal], warmup: int) -> list[float]:
    """Per timed step (after ``warmup``), the slowest worker's seconds."""
    steps = min(len(f.step_seconds) for f in finals)
    return [max(f.step_seconds[s] for f in finals) for s in range(min(warmup, steps - 1), steps)]


def measure_row(result: RunResult, workers: int, overlap: bool, steps: int, k: int, warmup: int = 2,
                duplex: bool | None = None) -> ModeRow:
    """One table row: what ``result`` measured, over the workers (see module docstring)."""
    name = result.mode + ("" if overlap else " (serialized)") + (" (one job)" if duplex is False else "")
    finals = result.finals
    row = ModeRow(mode=name, workers=workers, errors=result.errors, seconds=result.seconds)
    if len(finals) != workers:
        return replace(row, failed=f"{len(finals)} of {workers} workers finished")
    params = finals[0].params
    frame = INNET_FRAME_OVERHEAD + 4 * k
    if result.mode in GLOO_THEORY:  # both directions
        per_step = 2 * GLOO_THEORY[result.mode] * (workers - 1) / workers * 4 * params
    else:
        per_step = _mean([sum((f.agent_stats or {}).get(key, 0) for key in ("sent", "results", "statuses"))
                          * frame / steps for f in finals])
    timed = step_times(finals, warmup)
    measures = StepMeasures(
        params=params, step_ms=1000 * float(np.median(timed)), step_ms_p90=1000 * float(np.percentile(timed, 90)),
        timed_steps=len(timed), bytes_per_worker_step=per_step,
        bytes_source="theory" if result.mode in GLOO_THEORY else "agent frames",
        worker_rss_mb=_mean([f.rss_bytes for f in finals]) / 2**20,
        worker_rss_peak_mb=_mean([f.rss_peak_bytes for f in finals]) / 2**20,
        worker_tensor_bytes_peak=int(_mean([f.tensor_bytes_peak for f in finals])),
        accuracy=_mean([f.accuracy for f in finals]))
    cpus = [f.cpu_per_step for f in finals if f.cpu_per_step is not None]
    links = [f.link for f in finals if f.link is not None]
    return replace(
        row, measures=measures,
        # CPU seconds per timed step, summed over the workers
        cpu_s_per_step=(sum(c.trainer for c in cpus), sum(c.agent for c in cpus))
        if len(cpus) == len(finals) else None,
        link=LinkBytes(up=_mean([li.sent_bytes / li.steps for li in links]),
                       down=_mean([li.received_bytes / li.steps for li in links]))
        if len(links) == len(finals) else None,
        hook=_hook_split(finals, steps) if isinstance(finals[0].comm, HookComm) else None,
        luwu=_luwu_overlap(result, overlap, steps, measures.step_ms) if result.mode == "luwu" else None)


def _hook_split(finals: Sequence[TrainerFinal], steps: int) -> HookSplit:
    """The hook's own split of its time, per step."""
    hooks = [f.comm for f in finals if isinstance(f.comm, HookComm)]

    def per_step(part: Callable[[HookComm], float]) -> float:
        return _mean([part(c) / steps for c in hooks])

    return HookSplit(buckets=per_step(lambda c: c.buckets), seconds=per_step(lambda c: c.seconds),
                     stage_seconds=per_step(lambda c: c.stage_seconds),
                     agent_seconds=per_step(lambda c: c.agent_seconds))


def _luwu_overlap(result: RunResult, overlap: bool, steps: int, step_ms: float) -> LuwuOverlap:
    finals = result.finals
    comm = [(f.comm.push_seconds + f.comm.pull_seconds) / steps for f in finals if isinstance(f.comm, LuwuComm)]
    wait_ms = 1000 * _mean([_mean((f.step_wait_seconds or [])[2:]) for f in finals])  # warm-up excluded
    node = result.nodes[0] if result.nodes and isinstance(result.nodes[0], NodeStatus) else None
    return LuwuOverlap(worker_tensor_bytes_between_steps=max(f.tensor_bytes_between_steps or 0 for f in finals),
                       comm_busy_ms_per_step=1000 * _mean(comm),
                       # serialized mode waits in wait_idle, not in take: no split there
                       comm_wait_ms_per_step=wait_ms if overlap else None,
                       compute_ms_per_step=step_ms - wait_ms if overlap else None,
                       node=tuple((key, getattr(node, key, None)) for key in NODE_STATUS_KEYS))


def summary(rows: Sequence[ModeRow]) -> dict[int, dict[str, float]]:
    """Per N: the overlap's speedup (serialized LuWu step / overlapped LuWu step), and every
    mode's speedup over DDP + gloo (its median step / theirs)."""
    out: dict[int, dict[str, float]] = {}
    for n in sorted({r.workers for r in rows}):
        by = {r.mode: r.measures.step_ms for r in rows if r.workers == n and r.measures is not None}
        entry: dict[str, float] = {}
        if "luwu" in by and "luwu (serialized)" in by:
            entry["overlap_speedup"] = by["luwu (serialized)"] / by["luwu"]
        if "ddp-gloo" in by:
            for mode, step_ms in by.items():
                if mode != "ddp-gloo" and not mode.startswith("allreduce"):
                    entry[f"{mode} vs ddp-gloo"] = by["ddp-gloo"] / step_ms
        if "allreduce-gloo" in by and "allreduce-innet" in by:
            entry["allreduce-innet vs allreduce-gloo"] = by["allreduce-gloo"] / by["allreduce-innet"]
        if entry:
            out[n] = entry
    return out


def plot(doc: dict[str, Any], path: Path) -> Path | None:
    """Step time and bytes per worker against N of a saved document, one line per mode; None
    without matplotlib."""
    from innet.testbed.core.report import plain_log_ticks, pyplot

    try:
        plt = pyplot()
    except ImportError:
        return None

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    axes[0].set_yscale("log")
    plain_log_ticks(axes[0].yaxis)
    modes = list(dict.fromkeys(r["mode"] for r in doc["rows"]))
    on_link = all("link_up_bytes_per_step" in r for r in doc["rows"] if "step_ms" in r)
    for mode in modes:
        rows = [r for r in doc["rows"] if r["mode"] == mode and "step_ms" in r]
        ns = [r["workers"] for r in rows]
        p90 = [r.get("step_ms_p90", r["step_ms"]) - r["step_ms"] for r in rows]
        line = axes[0].errorbar(ns, [r["step_ms"] for r in rows], yerr=[[0] * len(rows), p90], marker="o",
                                capsize=3, label=mode)
        if on_link:
            axes[1].plot(ns, [r["link_up_bytes_per_step"] / 1e6 for r in rows], marker="o", label=f"{mode} up",
                         color=line[0].get_color())
            axes[1].plot(ns, [r["link_down_bytes_per_step"] / 1e6 for r in rows], marker="x", linestyle="--",
                         label=f"{mode} down", color=line[0].get_color())
        else:
            axes[1].plot(ns, [r["bytes_per_worker_step"] / 1e6 for r in rows], marker="o", label=mode)
        axes[2].plot(ns, [r["worker_tensor_bytes_peak"] / 1e6 for r in rows], marker="o", label=mode)
    # short y labels (a label longer than its axes runs into the suptitle); what they mean in the titles
    bytes_title = ("traffic on a worker's link (o up, x down)" if on_link
                   else "traffic (innet: frames; gloo: theory; both ways)")
    for ax, label, title in zip(axes, ("ms per step", "MB per worker per step", "MB per worker"),
                                ("step time (median, bar to p90)", bytes_title, "worker tensors at peak")):
        ax.set_xlabel("workers N")
        ax.set_ylabel(label)
        ax.set_title(title, fontsize=9)
        ax.set_xticks(sorted({r["workers"] for r in doc["rows"]}))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    m, s = doc["machine"], doc["settings"]
    fig.suptitle(f"{s['model']}, batch {s['batch']}/worker, K={s['k']}, window {s.get('window', 64)}; "
                 f"{doc['backend']}, {doc['switch']}; {m.get('cpu')} x{m.get('cores')}, "
                 f"load {doc['load_average_start']} -> {doc['load_average_end']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


@dataclass(frozen=True)
class BenchSettings:
    """What every mode of one run shares."""

    model: ModelShape = MODELS["digits"]
    steps: int = 20
    """Timed steps (after the warm-up)."""
    warmup: int = 2
    batch: int = 32
    lr: float = 0.01
    k: int | None = None
    """Values per innet packet; None: the largest whose frame fits ``mtu``."""
    mtu: int | None = None
    """Mininet links' MTU (None: 1500)."""
    window: int = 64
    in_flight_kib: int | None = None
    """The hook's and a duplex plan's payload in flight per agent (``RunConfig.in_flight_bytes``);
    None: their default."""
    executor: str = "auto"
    mininet: bool = False
    bw_mbps: float | None = None
    timeout: float = 1800.0
    """Seconds one mode may take at one N."""
    program: Path | None = None
    """An innet-p4c output directory built with ``INNET_K`` = K (large K takes minutes to
    compile on a loaded machine, longer than the switch's pipeline deadline); None: the
    switch compiles ``innet.p4`` for K."""

    def resolved_k(self) -> int:
        return self.k if self.k is not None else k_for_mtu(self.mtu or 1500)


def _testbed(n: int, settings: BenchSettings) -> Testbed:
    k = settings.resolved_k()
    options = TestbedOptions(switch_executor=settings.executor, k=k, window=settings.window,
                             defines=(("INNET_K", str(k)),) if k != 64 else (),
                             start_timeout=300.0 if k >= 1024 else 120.0)  # large K: minutes to compile
    if settings.program is not None:  # compiled already: no defines
        options = replace(options, program=settings.program, defines=())
    if not settings.mininet:
        return open_star(luwu_star(n, 1), options, backend="loopback")
    shaped = settings.bw_mbps is not None or settings.mtu is not None
    link = Link(bw_mbps=settings.bw_mbps, mtu=settings.mtu) if shaped else None
    return open_star(luwu_star(n, 1, link), options, backend="mininet")


def _wire(tb: Testbed, before: dict[str, tuple[int, int]] | None, n: int, steps: int) -> float | None:
    """Mean bytes (sent + received) per worker link per step since ``before`` (the whole run,
    start-up included); None on loopback."""
    after = tb.wire_bytes()
    if before is None or after is None:
        return None
    hosts = tb.worker_hosts()[:n]
    return float(np.mean([sum(after[h]) - sum(before[h]) for h in hosts])) / steps


def _switch_cpu(tb: Testbed) -> float | None:
    """CPU seconds of the switch process so far; None when it cannot be read."""
    from innet.testbed.core.processes import cpu_seconds

    pid = tb.switch_pid()
    try:
        return cpu_seconds(pid) if pid is not None else None
    except (OSError, ValueError, IndexError):
        return None


def _print_row(row: ModeRow) -> None:
    m = row.measures
    if m is None:
        print(f"N={row.workers} {row.mode:<22} FAILED: {row.failed}; {sorted(row.errors)}", flush=True)
        return
    link = (f"link up {row.link.up / 1e6:7.2f} down {row.link.down / 1e6:7.2f} MB" if row.link is not None else
            f"{m.bytes_per_worker_step / 1e6:7.2f} MB ({m.bytes_source})")
    print(f"N={row.workers} {row.mode:<22} {m.step_ms:8.1f} ms/step (p90 {m.step_ms_p90:8.1f})  "
          f"{link}/worker/step  RSS peak {m.worker_rss_peak_mb:6.1f} MB  "
          f"tensors {m.worker_tensor_bytes_peak / 1e6:7.2f} MB  acc {m.accuracy:.3f}  CPU s/step "
          + ", ".join(f"{key} {value:.2f}" for key, value in row.cpu_json().items()), flush=True)


def measure(workers: Sequence[int], out: Path, settings: BenchSettings = BenchSettings(),
            modes: Sequence[str] = DEFAULT_MODES, report: Reporter | None = None) -> LuwuBench:
    """Every mode at every N, on loopback or Mininet (see module docstring), saved as JSON and
    PNG under ``out``. Ctrl-C ends the grid early: the rows so far are written, ``partial``.
    ``report``: a progress bar told each mode as it starts and advanced when it ends."""
    rows: list[ModeRow] = []
    load_start = load_average()
    total = settings.warmup + settings.steps
    shape = settings.model
    partial = False
    try:  # Ctrl-C: the testbed of the moment torn down by its with, the rows so far kept
        for n in workers:
            with _testbed(n, settings) as tb:
                for name, (mode, overlap, duplex) in ((m, MODES[m]) for m in modes):
                    if report is not None:
                        report(f"{name}, {n} workers")
                    before = tb.wire_bytes()
                    load = load_average()
                    switch_cpu = _switch_cpu(tb)
                    result = run_training(tb, RunConfig(mode=mode, workers=n, steps=total, overlap=overlap, duplex=duplex,
                                                        lr=settings.lr, hidden=shape.hidden, data=shape.data,
                                                        inputs=shape.inputs, batch=settings.batch,
                                                        warmup=settings.warmup, timeout=settings.timeout,
                                                        in_flight_bytes=None if settings.in_flight_kib is None
                                                        else settings.in_flight_kib << 10))
                    after = _switch_cpu(tb)
                    row = replace(measure_row(result, n, overlap, total, tb.options.k, settings.warmup, duplex),
                                  testbed=ModeContext(
                                      wire_bytes_per_worker_step=_wire(tb, before, n, total),
                                      # start-up of the mode included
                                      switch_cpu_s_per_step=(after - switch_cpu) / total
                                      if switch_cpu is not None and after is not None else None,
                                      load_average=(load, load_average())))
                    rows.append(row)
                    _print_row(row)
                    if report is not None:
                        report.advance()
    except KeyboardInterrupt:
        partial = True
    backend = "loopback"
    if settings.mininet:
        shaping = [f"{settings.bw_mbps:g} Mbit/s host links (HTB)" if settings.bw_mbps is not None else "unshaped veths"]
        backend = "mininet star, " + ", ".join(shaping + ([f"MTU {settings.mtu}"] if settings.mtu else []))
    bench = LuwuBench(
        date=dt.datetime.now().isoformat(timespec="seconds"), machine=machine(), backend=backend,
        switch=switch_description(settings.executor), load_average_start=load_start, load_average_end=load_average(),
        settings=LuwuBenchSettings(steps=settings.steps, warmup=settings.warmup, batch=settings.batch,
                                   model=shape.describe(), params=shape.params, k=settings.resolved_k(),
                                   window=settings.window, mtu=settings.mtu or 1500, nodes=1, lr=settings.lr),
        rows=tuple(rows), summary=summary(rows), partial=partial)
    doc = bench.to_json()
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"bench_luwu-{bench.date.replace(':', '').replace('-', '')}"
    path = stem.with_suffix(".json")
    path.write_text(json.dumps(doc, indent=1) + "\n")
    png = plot(doc, stem.with_suffix(".png"))
    for n, entry in bench.summary.items():
        print(f"N={n}: " + ", ".join(f"{key} {value:.2f}x" for key, value in entry.items()))
    print(f"wrote {path}" + (f" and {png}" if png else ""))
    return replace(bench, files=(str(path),) + ((str(png),) if png else ()))


def _check(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments, in one line; None when nothing is."""
    if args.bw is not None and not args.mininet:
        return f"--bw {args.bw:g}: link shaping needs --backend mininet (loopback links are not shaped)"
    if args.bw is not None and not 0 < args.bw <= 100_000:
        return f"--bw {args.bw:g}: must be > 0 and <= 100000 Mbit/s"
    if args.mtu is not None and not args.mininet:
        return f"--mtu {args.mtu}: the MTU is a Mininet link's (loopback has none)"
    if args.mtu is not None and not 576 <= args.mtu <= 9000:
        return f"--mtu {args.mtu}: must be within 576..9000"
    if args.k is not None:
        if args.k not in SUPPORTED_K:
            return f"-k {args.k}: innet.p4 builds K in {', '.join(map(str, SUPPORTED_K))}"
        if args.mininet and IP_OVERHEAD + message_len(args.k) > (args.mtu or 1500):
            return (f"-k {args.k}: a {IP_OVERHEAD + message_len(args.k)}-byte innet packet exceeds the MTU "
                    f"{args.mtu or 1500} (largest K that fits: {k_for_mtu(args.mtu or 1500)})")
    if any(not 2 <= n <= 31 for n in args.workers):
        return (f"--workers {','.join(map(str, args.workers))}: each must be within 2..31 (one member "
                "is the optimizer node, 32 at most)")
    if args.steps < 3:
        return f"--steps {args.steps}: must be >= 3 (timed steps after the warm-up)"
    if args.warmup < 1:
        return f"--warmup {args.warmup}: must be >= 1 (the first step builds buckets and buffers)"
    if args.batch < 1:
        return f"--batch {args.batch}: must be >= 1"
    if args.in_flight is not None and args.in_flight < 0:
        return f"--in-flight {args.in_flight}: must be >= 0 KiB (0: the whole window)"
    if args.lr is not None and not 0 < args.lr < 1:
        return f"--lr {args.lr:g}: must be within (0, 1)"
    if args.window < 1:
        return f"--window {args.window}: must be >= 1"
    if args.program is not None and not args.program.is_dir():
        return f"--program {args.program}: not an innet-p4c output directory"
    if args.program is not None and args.k is None:
        return f"--program {args.program}: give -k, the INNET_K it was built with"
    if args.hidden is not None and any(w < 1 for w in args.hidden):
        return f"--hidden {' '.join(map(str, args.hidden))}: widths must be >= 1"
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``innet bench luwu``."""
    add_workers(parser, (2, 4, 8), "worker counts, one run each, e.g. 2,4,8 (each 2..31)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps after the warm-up (at least 3)")
    parser.add_argument("--warmup", type=int, default=2, help="steps before the timed ones")
    parser.add_argument("--model", choices=tuple(MODELS), default="digits",
                        help="digits: MLP 64-128-64-10 on digits; wide: MLP 1024-2048-2048-2048-10 (10.5 M "
                             "parameters) on a synthetic task")
    parser.add_argument("--hidden", type=int, nargs="+", default=None, help="hidden layer widths (override the model's)")
    parser.add_argument("--batch", type=int, default=32, help="samples per worker per step")
    parser.add_argument("--lr", type=float, default=None, help="Adam's learning rate (default 0.01; wide: 0.001)")
    parser.add_argument("--modes", nargs="+", choices=tuple(MODES), default=list(DEFAULT_MODES), metavar="MODE",
                        help="modes to run, in this order: " + ", ".join(MODES))
    add_executor(parser)
    add_backend(parser, default="loopback", note="; link shaping (--bw, --mtu) needs mininet")
    parser.add_argument("--bw", type=float, default=None, help="Mininet host link rate in Mbit/s (default unshaped)")
    parser.add_argument("--mtu", type=int, default=None, help="Mininet links' MTU (default 1500)")
    add_values_per_packet(parser)
    parser.add_argument("--window", type=int, default=64, help="slots of the job (chunks in flight per worker)")
    parser.add_argument("--in-flight", type=int, default=None, metavar="KIB",
                        help="ddp-innet and duplex luwu: payload KiB in flight per agent (0: the whole window; "
                             "default 64 on Mininet, the hook's whole window on loopback)")
    parser.add_argument("--program", type=Path, default=None,
                        help="innet-p4c output directory of innet.p4 built with -D INNET_K=<K> (give -k too)")
    add_out(parser)


def command(args: argparse.Namespace) -> int:
    """``innet bench luwu``: check the arguments, run every mode, print and save."""
    args.mininet = args.backend == "mininet" or (args.backend == "auto" and os.geteuid() == 0)
    error = _check(args)
    if error:
        print(f"innet bench luwu: {error}", file=sys.stderr)
        return 2
    shape = MODELS[args.model]
    if args.hidden is not None:
        shape = replace(shape, hidden=tuple(args.hidden))
    lr = args.lr if args.lr is not None else (0.001 if args.model == "wide" else 0.01)
    settings = BenchSettings(model=shape, steps=args.steps, warmup=args.warmup, batch=args.batch, lr=lr, k=args.k,
                             mtu=args.mtu, window=args.window, executor=args.executor, mininet=args.mininet,
                             bw_mbps=args.bw, program=args.program, in_flight_kib=args.in_flight)
    from innet.controller.errors import ControllerError

    try:
        with Reporter(console(), "bench luwu", total=len(args.workers) * len(args.modes), markup=False) as report:
            bench = measure(args.workers, args.out, settings, args.modes, report)
    except (TestbedError, ControllerError) as error:  # e.g. the switch did not take the program in time
        print(f"innet bench luwu: {type(error).__name__}: {str(error).splitlines()[0]}", file=sys.stderr)
        return 1
    if bench.partial:
        return interrupted_partial("innet bench luwu", bench.files[0])
    return 0
