"""``innet``: the one command-line entry point, a thin layer over the public API.

Subcommands grow with the project; each is a few lines that call into a library module.
Only this module (and the console scripts under ``innet.switch.cli``) turns exceptions
into exit codes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from innet.conformance import SuiteReport, default_suites, run_suites


def _print_report(report: SuiteReport, verbose: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title="Embedded P4 target: STF conformance")
    table.add_column("suite")
    table.add_column("tests", justify="right")
    table.add_column("passed", justify="right")
    table.add_column("failed", justify="right")
    table.add_column("packets", justify="right")
    table.add_column("seconds", justify="right")
    for s in report.suites:
        table.add_row(str(s.directory), str(len(s.results)), str(s.passed), str(s.failed),
                      str(s.packets), f"{s.seconds:.2f}")
    console.print(table)
    for s in report.suites:
        for r in s.results:
            if not r.passed or verbose:
                console.print(("[green]PASS[/] " if r.passed else "[red]FAIL[/] ") + r.name, markup=True)
                if not r.passed:
                    console.print(r.message, markup=False, highlight=False)
    console.print(f"{report.passed} passed, {report.failed} failed")


def _cmd_conformance(args: argparse.Namespace) -> int:
    dirs = [Path(d) for d in args.dirs] if args.dirs else default_suites()
    missing = [d for d in dirs if not d.is_dir()]
    if missing:
        print(f"innet: no such suite directory: {missing[0]}", file=sys.stderr)
        return 2
    report = run_suites(dirs)
    _print_report(report, args.verbose)
    return 0 if report.failed == 0 else 1


def _cmd_demo(args: argparse.Namespace) -> int:
    # Until the in-network aggregation demo exists, the main job exercises the embedded
    # target end to end: every STF suite compiled by the front-end and run by the executor.
    args.dirs = []
    return _cmd_conformance(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="innet", description="In-network aggregation on P4 software switches.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the main job on the embedded target")
    demo.add_argument("-v", "--verbose", action="store_true", help="list every test, not only failures")
    demo.set_defaults(func=_cmd_demo)
    conf = sub.add_parser("conformance", help="run STF suites (directories of NAME.p4 + NAME.stf)")
    conf.add_argument("dirs", nargs="*", help="suite directories (default: the repo's and ../shared/conformance)")
    conf.add_argument("-v", "--verbose", action="store_true", help="list every test, not only failures")
    conf.set_defaults(func=_cmd_conformance)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    rc: int = args.func(args)
    return rc


if __name__ == "__main__":
    sys.exit(main())
