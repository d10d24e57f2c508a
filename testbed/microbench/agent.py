"""Host agent throughput: the python and the native (C) datapath, chunks per second.

Run as ``innet bench agent [--values N] [--k K ...] [--window W]
[--rounds R] [--out results/]``. No root: everything is on 127.0.0.1.

One aggregator (``innet.host.agent.aggregator.Aggregator`` or ``innet.host.agent.native.NativeAggregator``)
streams an int32 vector of N values through a C echo switch (``testbed/microbench/native/echo.c``:
every CONTRIB answered with its RESULT, as a one-worker sum job does), so the figure is the
agent's own rate: packing, sending, receiving, timers; wall and CPU time of this process
are both reported (the machine may be shared). Quantization of N float32 values is timed
too (``quantize_sum``, python vs native). Saves ``bench_agent.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

from innet.children import end_popen
from innet.testbed.core.machine import describe
from innet.argtypes import add_out, add_values_per_packet, interrupted_partial, measure_each
from innet.testbed.microbench.records import AgentRow


def measure(datapath: str, port: int, values: int, k: int, window: int, rounds: int) -> AgentRow:
    """One datapath at one K: ``rounds`` timed operations of ``values`` through the echo switch on ``port``."""
    from innet.host.agent.native import datapath as dp
    from innet.host.agent.aggregator import JobConfig, Timing
    from innet.host.agent.transport import UdpTransport, UdpTransportConfig

    codec = dp.Codec(dp.load_native() if datapath == "native" else None)
    transport = UdpTransport(UdpTransportConfig("127.0.0.1", port, "127.0.0.1"))
    try:
        agg = codec.aggregator(JobConfig(1, 0, 1, window, k, epoch=1), transport, Timing(chunk_deadline=30))
        vec = np.arange(values, dtype=np.int32)
        agg.run(vec[:k * window * 4])  # warm-up: RTT estimate, caches
        wall = cpu = 0.0
        for _ in range(rounds):
            t0, c0 = time.perf_counter(), time.process_time()
            out = agg.run(vec)
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            if not np.array_equal(out, vec):
                raise RuntimeError(f"{datapath}: echo switch returned other values")
        chunks = rounds * -(-values // k)
        x = np.random.default_rng(0).normal(size=values).astype(np.float32)
        q0 = time.perf_counter()
        codec.quantize_sum(x, 4.0, 8)
        quantize_s = time.perf_counter() - q0
        return AgentRow(datapath=datapath, k=k, window=window, values=values, rounds=rounds,
                        chunks_per_s=round(chunks / wall), chunks_per_cpu_s=round(chunks / max(cpu, 1e-9)),
                        values_per_s=round(chunks * k / wall), retransmitted=agg.stats.retransmitted,
                        quantize_values_per_s=round(values / quantize_s))
    finally:
        transport.close()


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of ``innet bench agent``."""
    ap.add_argument("--values", type=int, default=1 << 20, help="int32 values per operation (default 1M)")
    add_values_per_packet(ap, several=True, help_text="values per packet (repeatable; default 64 and 256)")
    ap.add_argument("--window", type=int, default=64, help="slots (default 64)")
    ap.add_argument("--rounds", type=int, default=3, help="timed operations per point (default 3)")
    add_out(ap)


def command(args: argparse.Namespace) -> int:
    """``innet bench agent``: python and native datapaths through a C echo switch."""
    for name, value, low in (("--values", args.values, 1), ("--window", args.window, 1), ("--rounds", args.rounds, 1)):
        if value < low:
            print(f"innet bench agent: {name} {value}: must be >= {low}", file=sys.stderr)
            return 2
    from innet.native_build import NativeBuildError
    from innet.testbed.microbench.native import tool

    try:
        echo = tool("echo")
    except NativeBuildError as error:
        print(f"innet bench agent: {error}", file=sys.stderr)
        return 1
    proc = subprocess.Popen([str(echo), "127.0.0.1", "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        points = [(k, datapath) for k in args.k or [64, 256] for datapath in ("python", "native")]
        rows, partial = measure_each("bench agent", points, lambda p: measure(p[1], port, args.values, p[0],
                                                                              args.window, args.rounds),
                                     name=lambda p: f"K={p[0]}, {p[1]} datapath")
    finally:
        end_popen(proc)
    m = describe().to_json()
    doc = {"format": "innet-bench-agent/1", "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": m,
           "switch": "C echo switch on 127.0.0.1 (one-worker sum job)", "rows": [r.to_json() for r in rows],
           "partial": partial}
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"one host agent through a C echo switch ({m['cpu']}, {m['cores']} cores, "
                        f"load {m['load_average']}; {args.values} values, window {args.window})")
    for col in ("K", "datapath", "chunks/s", "chunks/CPU-s", "values/s", "quantize values/s"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r.k), r.datapath, f"{r.chunks_per_s:,}", f"{r.chunks_per_cpu_s:,}",
                      f"{r.values_per_s:,}", f"{r.quantize_values_per_s:,}")
    console = Console()
    console.print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "bench_agent.json"
    path.write_text(json.dumps(doc, indent=2))
    try:
        from innet.testbed.core.report import pyplot

        plt = pyplot()

        fig, ax = plt.subplots(figsize=(6, 3))
        labels = [f"K={r.k}\n{r.datapath}" for r in rows]
        ax.bar(labels, [r.chunks_per_s for r in rows],
               color=["tab:gray" if r.datapath == "python" else "tab:blue" for r in rows])
        ax.set_ylabel("chunks/s, one agent")
        ax.set_title(f"innet agent, {m['cpu'][:40]}, load {m['load_average']}", fontsize=7)
        fig.tight_layout()
        fig.savefig(args.out / "bench_agent.png", dpi=120)
        plt.close(fig)
        console.print(f"saved {path} and {args.out / 'bench_agent.png'}")
    except ImportError:
        console.print(f"saved {path}")
    return interrupted_partial("innet bench agent", path) if partial else 0
