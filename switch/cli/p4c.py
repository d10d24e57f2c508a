"""``innet-p4c``: compile a P4_16 v1model program for innet's embedded target.

Shaped like ``p4c-bm2-ss``::

    innet-p4c prog.p4 -o build/ [-I dir] [-D NAME[=VAL]] [--p4runtime-files a.txt,b.json]

writes ``build/<prog>.innet.json`` (the device config, see
:mod:`innet.switch.device_config`) and ``build/p4info.txtpb`` (P4Info in p4c's text
form; ``--p4runtime-format binary|json`` picks ``p4info.bin`` / ``p4info.json``).
``--p4runtime-files`` writes further P4Info copies, the format taken from each suffix
(.txt, .txtpb, .json, .bin) as p4c does.  Exit status: 0 success, 1 compile error
(printed as ``file:line:col: error: ...`` with the source line and a caret), 2 bad
command line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from innet.argtypes import CommandParser, input_file, output_dir, run_command

DEFAULT_NAMES = {"text": "p4info.txtpb", "binary": "p4info.bin", "json": "p4info.json"}


def _define(text: str) -> tuple[str, str | None]:
    name, sep, value = text.partition("=")
    if not name or not name.replace("_", "a").isalnum() or name[0].isdigit():
        raise argparse.ArgumentTypeError(f"-D expects NAME or NAME=VALUE with a C identifier NAME, got {text!r}")
    return name, (value if sep else None)


def _runtime_files(text: str) -> list[Path]:
    from innet.switch.p4info import format_for_path

    paths = [Path(p) for p in text.split(",") if p]
    if not paths:
        raise argparse.ArgumentTypeError("--p4runtime-files needs at least one file name")
    for p in paths:
        try:
            format_for_path(p)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return paths


def make_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="innet-p4c",
        description="Compile a P4_16 (v1model) program for innet's embedded target and emit its P4Info.",
    )
    parser.add_argument("source", type=input_file, help="P4 source file")
    parser.add_argument("-o", "--output-dir", type=output_dir, default=Path("."), metavar="DIR",
                        help="directory for the device config and P4Info (created if missing; default .)")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], type=Path, metavar="DIR",
                        help="add DIR to the #include search path")
    parser.add_argument("-D", dest="defines", action="append", default=[], type=_define, metavar="NAME[=VAL]",
                        help="define a preprocessor macro")
    parser.add_argument("--p4runtime-files", type=_runtime_files, default=[], metavar="FILES",
                        help="comma-separated P4Info files to write; format from suffix .txt/.txtpb/.json/.bin")
    parser.add_argument("--p4runtime-format", choices=sorted(DEFAULT_NAMES), default="text",
                        help="format of the P4Info written into the output directory")
    return parser


def _p4info_error() -> type[Exception]:
    """P4InfoError, imported only when an exception reaches its ``except`` clause: the
    P4Info modules bring finsy, which ``build`` imports itself after the front-end's
    memory peak."""
    from innet.switch.p4info import P4InfoError

    return P4InfoError


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    return run_command("innet-p4c", lambda: _compile(args))


def _compile(args: argparse.Namespace) -> int:
    from innet.switch.device_config import build
    from innet.switch.frontend.errors import FrontendError

    try:
        result = build(args.source, tuple(args.include_dirs), dict(args.defines))
    except FrontendError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except _p4info_error() as exc:
        print(f"{args.source}: error: {exc}", file=sys.stderr)
        return 1
    from innet.switch.p4info import P4InfoFormat, write_p4info

    try:
        out_dir: Path = args.output_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{args.source.stem}.innet.json").write_bytes(result.config.to_bytes())
        fmt = P4InfoFormat(args.p4runtime_format)
        write_p4info(result.p4info, out_dir / DEFAULT_NAMES[args.p4runtime_format], fmt)
        for path in args.p4runtime_files:
            write_p4info(result.p4info, path)
    except OSError as exc:
        print(f"innet-p4c: error: cannot write output: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
