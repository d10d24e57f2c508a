"""``innet model cost|collectives``: the rail models as tables, JSON and PNG."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from innet.argtypes import int_range, output_dir, positive_float
from innet.argtypes import sizes

EXIT_USAGE = 2


def cmd_model(args: argparse.Namespace) -> int:
    from rich.console import Console

    from innet.testbed.rail.models import netcost, railperf, report

    console = Console(width=180) if not Console().is_terminal else Console()
    try:
        if args.model == "cost":
            parts = netcost.Parts(args.switch_usd, args.switch_w, args.transceiver_usd, args.transceiver_w)
            clusters = (netcost.SEED_CLUSTERS if args.gpus is None else
                        (netcost.Cluster(args.gpus, args.gpus_per_domain, args.radix),))
            rows = report.cost_rows(clusters, parts)
            console.print(report.cost_table(rows, parts))
            doc = {"model": "cost", "parts": asdict(parts), "rows": rows}
        else:
            grid = railperf.Grid(args.gpus_per_domain, args.domains, args.c_s * 1e9, args.c_f * 1e9)
            rows = report.perf_rows(grid, args.sizes)
            console.print(report.perf_table(grid, rows))
            doc = {"model": "collectives", "grid": asdict(grid), "rows": rows}
    except railperf.ModelError as error:
        print(f"innet model {args.model}: {error}", file=sys.stderr)
        return EXIT_USAGE
    json_path, png_path = report.save(doc, args.out, f"model-{args.model}")
    console.print(f"wrote {json_path} and {png_path}")
    return 0


def add_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register ``model`` on the ``innet`` parser."""
    from innet.testbed.rail.models.netcost import SEED_PARTS

    model = sub.add_parser("model", help="analytical models of rail-only vs rail-optimized networks")
    msub = model.add_subparsers(dest="model", required=True)
    cost = msub.add_parser("cost", help="switch/transceiver counts, cost and power (default: the seed's clusters)")
    cost.add_argument("--gpus", type=int_range(2), default=None, help="cluster size N (default: the seed's set)")
    cost.add_argument("--gpus-per-domain", type=int_range(1), default=8, help="HB domain size x (default 8)")
    cost.add_argument("--radix", type=int_range(2), default=64, help="switch ports k (default 64)")
    cost.add_argument("--switch-usd", type=positive_float, default=SEED_PARTS.switch_usd, help="price per switch")
    cost.add_argument("--switch-w", type=positive_float, default=SEED_PARTS.switch_w, help="watts per switch")
    cost.add_argument("--transceiver-usd", type=positive_float, default=SEED_PARTS.transceiver_usd,
                      help="price per transceiver")
    cost.add_argument("--transceiver-w", type=positive_float, default=SEED_PARTS.transceiver_w,
                      help="watts per transceiver")
    coll = msub.add_parser("collectives", help="all-to-all and allreduce completion times of both designs")
    coll.add_argument("--gpus-per-domain", "-x", type=int_range(1), default=8, help="x (default 8)")
    coll.add_argument("--domains", "-y", type=int_range(1), default=8, help="y (default 8)")
    coll.add_argument("--c-s", type=positive_float, default=400.0, help="NIC Gbit/s per GPU (default 400)")
    coll.add_argument("--c-f", type=positive_float, default=3600.0, help="HB Gbit/s per GPU (default 3600)")
    coll.add_argument("--sizes", type=sizes, default=(1 << 20, 16 << 20, 256 << 20),
                      help="bytes, e.g. 1M,16M (default 1M,16M,256M)")
    for p in (cost, coll):
        p.add_argument("--out", type=output_dir, default=Path("results"), help="output directory (default results/)")
        p.set_defaults(func=cmd_model)
