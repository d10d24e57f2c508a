"""``innet-stf PROGRAM.p4 TEST.stf``: run a p4c-style STF test on the embedded target.

Exit status: 0 all outputs as expected, 1 output mismatch (expected vs got per port, in
hex, on stderr), 2 bad command line, compile error, or malformed STF file (one line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from innet.argtypes import EXIT_USAGE, STF_EXECUTOR, CommandParser, add_executor, input_file, run_command

PROG = "innet-stf"


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog=PROG, description="Run an STF test against a P4_16 v1model program.")
    parser.add_argument("program", type=input_file, help="P4 source file")
    parser.add_argument("test", type=input_file, help="STF test file")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], type=Path, metavar="DIR",
                        help="add DIR to the #include search path")
    add_executor(parser, default=STF_EXECUTOR, what="packet executor (as innet conformance's)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log the executor at DEBUG (log_msg output)")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code else 0
    return run_command(PROG, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    if args.verbose:
        import logging

        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    from innet.switch.frontend.errors import FrontendError
    from innet.switch.pipeline.errors import PipelineError
    from innet.native_build import NativeBuildError
    from innet.switch.stf import StfError, run_stf

    try:
        result = run_stf(args.program, args.test, args.include_dirs, executor=args.executor)
    except (FrontendError, PipelineError, StfError, NativeBuildError) as e:
        print(f"{PROG}: {str(e).splitlines()[0]}", file=sys.stderr)
        return EXIT_USAGE
    if result.passed:
        print(f"PASS {result.message}")
        return 0
    print(f"FAIL {result.message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
