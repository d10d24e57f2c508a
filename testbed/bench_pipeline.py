"""Executor throughput benchmark: packets per second of ``Pipeline.process`` on one core.

Run as ``python -m innet.testbed.bench_pipeline [--seconds S] [--out results/]``. Two
workloads:

- ``basic_forward``: Ethernet/IPv4, LPM lookup (256 /24 routes), TTL decrement, IPv4
  checksum update (``update_checksum`` csum16) -- target >= 100,000 pkt/s;
- ``agg64``: 64 bit<32> header values added into 64 register arrays per packet --
  target >= 30,000 pkt/s.

The programs are ``p4/examples/<name>.p4``: the control-plane commands of the example's
``.stf`` are applied and its packets that produce output are replayed. Prints a rich table
and saves JSON (and a PNG when matplotlib is installed) naming the machine and settings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TARGETS = {"basic_forward": 100_000, "agg64": 30_000}


def measure(pl: Any, pkts: list[tuple[int, bytes]], seconds: float) -> tuple[float, int]:
    """pkt/s over at least ``seconds`` of back-to-back ``process`` calls."""
    process = pl.process
    for port, data in pkts[:64]:  # warm up caches
        process(port, data)
    n = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for port, data in pkts:
            process(port, data)
        n += len(pkts)
        now = time.perf_counter()
        if now >= deadline:
            break
    return n / (now - t0), n


def load_workload(name: str) -> tuple[Path, Any, list[tuple[int, bytes]], str]:
    """(program, pipeline, packets, source of packets) for one workload:
    ``p4/examples/<name>.p4`` with the control plane and forwarded packets of its ``.stf``."""
    from innet.switch.pipeline import Pipeline
    from innet.switch.stf import apply_control, parse_stf

    example = REPO / "p4" / "examples" / f"{name}.p4"
    stf = example.with_suffix(".stf")
    if not (example.is_file() and stf.is_file()):
        raise FileNotFoundError(f"{name}: benchmark program {example} or its {stf.name} is missing")
    pl = Pipeline.from_file(example)
    test = parse_stf(stf.read_text(), str(stf))
    for _, cmd, args in test.control:
        apply_control(pl, cmd, args)
    pkts = [(port, data) for _, port, data in test.packets if pl.process(port, data)]
    return example, pl, pkts, f"{len(pkts)} forwarded packet(s) of {stf.name}"


def run(seconds: float) -> list[dict[str, Any]]:
    rows = []
    for name in TARGETS:
        path, pl, pkts, what = load_workload(name)
        if not pkts or not pl.process(*pkts[0]):
            raise RuntimeError(f"{name}: no benchmark packet produces output")
        rate, n = measure(pl, pkts, seconds)
        rows.append({"workload": name, "program": str(path.relative_to(REPO)), "packets_used": what,
                     "bytes_per_packet": len(pkts[0][1]), "pkt_per_s": round(rate), "packets": n,
                     "target_pkt_per_s": TARGETS[name], "meets_target": rate >= TARGETS[name]})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_pipeline", description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="measurement time per workload (default 3)")
    ap.add_argument("--out", type=Path, default=Path("results"), help="directory for JSON/PNG (default results/)")
    args = ap.parse_args(argv)
    rows = run(args.seconds)
    machine = {"platform": platform.platform(), "python": sys.version.split()[0], "cpu": _cpu(),
               "cores_used": 1, "backend": "innet embedded pipeline (generated Python)"}
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"innet pipeline throughput, one core ({machine['cpu']}, Python {machine['python']})")
    for col in ("workload", "program", "packets", "bytes/pkt", "pkt/s", "target", "ok"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["workload"], r["program"], r["packets_used"], str(r["bytes_per_packet"]),
                      f"{r['pkt_per_s']:,}", f"{r['target_pkt_per_s']:,}", "yes" if r["meets_target"] else "NO")
    Console().print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / "bench_pipeline.json"
    out.write_text(json.dumps({"machine": machine, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "results": rows}, indent=2))
    print(f"saved {out}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3))
        ax.bar([r["workload"] for r in rows], [r["pkt_per_s"] for r in rows], color="tab:blue", label="measured")
        ax.scatter([r["workload"] for r in rows], [r["target_pkt_per_s"] for r in rows], color="red", marker="_", s=400, label="target")
        ax.set_ylabel("packets/s (one core)")
        ax.set_title(f"innet pipeline, {str(machine['cpu'])[:40]}", fontsize=8)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.out / "bench_pipeline.png", dpi=120)
        print(f"saved {args.out / 'bench_pipeline.png'}")
    except ImportError:
        pass
    return 0


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
