"""``innet bench rail-failover``: how long a rail-only job takes to replace a dead HB domain by a
spare, and whether the run ends where an uninterrupted one does.

One rail-only testbed with one spare domain; digits training with the rail switches as the
optimizer, once uninterrupted (the reference: its final parameters, also checked against
the numpy model), then once per ``--spare`` kind and ``--kill-at`` with the domain of ``--rank`` SIGKILLed when
rail 1's switch has completed that many chunks (:mod:`innet.testbed.rail.spare`). The failed
domain's hosts become the spare of the next run (a repaired server). Prints a table and
writes ``rail-failover-<stamp>.json``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from innet.argtypes import Reporter, add_backend, add_out, brought_up, console, interrupted_partial
from innet.testbed.core.report import Column, markdown_table, rich_table, save_json
from innet.testbed.core.testbed import TestbedError, TestbedOptions

if TYPE_CHECKING:
    from innet.testbed.rail.records import FailoverBench

SPARES = {"cold": ("cold",), "warm": ("warm",), "both": ("cold", "warm")}
"""``--spare``: started at the take-over (cold) or with the job, waiting (warm)."""

COLUMNS = (
    Column("spare", lambda r: r["spare"], align="left"),
    Column("kill at (completions on r1)", lambda r: str(r["kill_at_completions"])),
    Column("resume step", lambda r: str(r["resume_step"])),
    Column("chunks of it applied", lambda r: f"{r['applied_chunks_of_step']}/{r['chunks_per_step']}"),
    Column("read state (s)", lambda r: f"{r['read_state_s']:.2f}"),
    Column("reprogram (s)", lambda r: f"{r['reprogram_s']:.3f}"),
    Column("spare up (s)", lambda r: f"{r['spare_ready_s']:.2f}"),
    Column("its first step (s)", lambda r: f"{r['spare_first_step_s']:.2f}"),
    Column("recovery (s)", lambda r: f"{r['recovery_s']:.2f}"),
    Column("normal step (ms)", lambda r: f"{r['normal_step_s'] * 1e3:.1f}"),
    Column("= uninterrupted", lambda r: "yes" if r["exact"] else "NO", alarm=lambda r: not r["exact"]),
)


def run(args: argparse.Namespace, console: Any) -> FailoverBench:
    """The runs ``args`` ask for; the table printed, the document written (its path in ``file``)."""
    from innet.testbed.backends.select import resolve_backend
    from innet.testbed.core.topology import Link, rail_only
    from innet.testbed.rail.digits import DigitsConfig, simulate
    from innet.testbed.rail.grid import shard_bounds
    from innet.testbed.rail import workloads
    from innet.testbed.rail.records import FailoverBench, FailoverRow
    from innet.testbed.rail.spare import run_digits_failover
    from innet.testbed.rail.testbed import RailTestbed

    backend = resolve_backend(args.backend)
    topo = rail_only(args.domains + 1, args.gpus_per_domain, nic_link=Link(bw_mbps=args.nic_bw),
                     hb_link=Link(bw_mbps=args.hb_bw))
    options = TestbedOptions(window=args.window, chunk_deadline=args.deadline)
    rows: list[FailoverRow] = []
    tb = RailTestbed(topo, options, backend=backend, spares=1)
    runs = len(SPARES[args.spare]) * len(args.kill_at)
    model_exact: bool | None = None
    partial = False
    try:  # Ctrl-C: the testbed torn down by its with, the runs so far kept
        with brought_up(tb, Reporter(console, f"bringing up {topo.name} and a spare on {backend}")), \
                Reporter(console, "bench rail-failover", total=1 + runs, counts=lambda _: True) as report:
            report("digits, uninterrupted (the reference)")
            config = DigitsConfig(gpus=tb.gpus, steps=args.steps)
            plain = workloads.digits(tb, config)
            reference = plain.finals[0]
            bounds = shard_bounds(plain.initial.size, tb.options.k, tb.grid.x)
            model_exact = bool(np.array_equal(simulate(config, plain.initial, bounds,
                                                       [plain.jobs[r] for r in tb.grid.rails]), reference))
            console.print(f"{topo.name} on {backend}: {args.domains} domains of {args.gpus_per_domain} GPUs and one "
                          f"spare; digits, {config.steps} steps uninterrupted: bit-exact with the numpy model "
                          f"{model_exact}")
            for spare in SPARES[args.spare]:
                for kill_at in args.kill_at:
                    report(f"{spare} spare, kill at {kill_at} chunks")
                    out = run_digits_failover(tb, config, rank=args.rank, kill_at=kill_at,
                                              timeout=args.deadline * 4, warm=spare == "warm")
                    exact = all(np.array_equal(f, reference) for f in out.run.finals.values()) and bool(
                        np.array_equal(out.run.registers, reference))
                    rows.append(FailoverRow(out.failover, exact))
    except KeyboardInterrupt:
        partial = True
    table_rows = [r.to_json() for r in rows]
    console.print(rich_table(f"spare HB domain taking over rank {args.rank} ({backend})", COLUMNS, table_rows))
    if args.markdown:
        console.print(markdown_table(COLUMNS, table_rows), markup=False, highlight=False)
    result = FailoverBench(topo.name, backend, args.steps, args.window, model_exact, tuple(rows), partial)
    path = save_json(args.out, "rail-failover", result.to_json())
    console.print(f"wrote {path}")
    return replace(result, file=str(path))


def _check(args: argparse.Namespace) -> str | None:
    if args.domains < 2:
        return f"--domains {args.domains}: the job needs at least 2 HB domains besides the spare"
    if args.gpus_per_domain < 1:
        return f"--gpus-per-domain {args.gpus_per_domain}: must be at least 1"
    if not 0 <= args.rank < args.domains:
        return f"--rank {args.rank}: must be one of the job's domains 0..{args.domains - 1}"
    if args.steps < 2:
        return f"--steps {args.steps}: must be at least 2"
    if any(k < 1 for k in args.kill_at):
        return f"--kill-at {min(args.kill_at)}: completions must be at least 1"
    if args.nic_bw <= 0 or args.hb_bw <= 0:
        return f"--nic-bw {args.nic_bw} / --hb-bw {args.hb_bw}: link rates must be positive"
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``innet bench rail-failover``."""
    parser.add_argument("--domains", type=int, default=2, help="HB domains in the job, besides the spare (default 2)")
    parser.add_argument("--gpus-per-domain", type=int, default=2, help="GPUs per domain = rails (default 2)")
    parser.add_argument("--steps", type=int, default=60, help="digits training steps (default 60)")
    parser.add_argument("--rank", type=int, default=1, help="the job rank whose domain dies (default 1)")
    parser.add_argument("--kill-at", type=int, nargs="+", default=[30, 100, 170],
                        help="kill when rail 1's switch has completed this many chunks; one run each")
    parser.add_argument("--spare", choices=tuple(SPARES), default="both",
                        help="cold: the spare's GPUs start at the take-over; warm: they start with the job and "
                             "wait for the order; both (default)")
    parser.add_argument("--window", type=int, default=8, help="slots of the job (default 8)")
    parser.add_argument("--deadline", type=float, default=60.0,
                        help="the GPUs' chunk deadline in seconds: the survivors wait this long (default 60)")
    add_backend(parser)
    parser.add_argument("--nic-bw", type=float, default=100.0, help="Mininet NIC links, Mbit/s (default 100)")
    parser.add_argument("--hb-bw", type=float, default=1000.0, help="Mininet HB links, Mbit/s (default 1000)")
    parser.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    add_out(parser)


def command(args: argparse.Namespace) -> int:
    """``innet bench rail-failover``: one run per --kill-at and spare kind, table and JSON."""
    error = _check(args)
    if error:
        print(f"innet bench rail-failover: {error}", file=sys.stderr)
        return 2
    from innet.controller.errors import ControllerError
    from innet.testbed.rail.failover import FailoverError

    try:
        result = run(args, console())
    except (TestbedError, ControllerError, FailoverError) as error:
        print(f"innet bench rail-failover: {type(error).__name__}: {str(error).splitlines()[0]}", file=sys.stderr)
        return 1
    if result.partial:
        return interrupted_partial("innet bench rail-failover", result.file)
    return 0 if result.good else 1
