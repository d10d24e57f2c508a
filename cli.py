"""``innet``: the one command-line entry point, a thin layer over the public API.

Subcommands grow with the project; each is a few lines that call into a library module.
Only this module (and the console scripts under ``innet.switch.cli``) turns exceptions
into exit codes.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from innet.argtypes import console as new_console
from innet.argtypes import (EXIT_USAGE, STF_EXECUTOR, CommandParser, add_executor, add_values_per_packet,
                            command_parsers, given_options, input_file, int_range, interrupted, prepare_out,
                            run_command)
from innet.conformance import SuiteReport, default_suites, run_suites, stf_files
from innet.testbed.cli.commands import add_commands as add_testbed_commands
from innet.testbed.cli.cluster import add_commands as add_cluster_commands
from innet.testbed.cli.geo import add_commands as add_geo_commands
from innet.testbed.cli.live import add_commands as add_live_commands
from innet.testbed.cli.model import add_commands as add_model_commands

if TYPE_CHECKING:
    import numpy.typing as npt


def _print_report(report: SuiteReport, verbose: bool) -> None:
    from rich.table import Table

    console = new_console()
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
    ran = report.passed + report.failed
    console.print(f"{report.passed} passed, {report.failed} failed"
                  + (f" ({ran} of {report.planned} tests ran before Ctrl-C)" if report.interrupted else ""))


def _cmd_p4c_samples(directory: Path, executor: str) -> int:
    """Pass rate on p4c's own v1model samples; failures are data (exit 0), a bad DIR is not."""
    from innet.p4c_samples import SamplesDirError, run_samples

    try:
        report = run_samples(directory, executor=executor)
    except SamplesDirError as e:
        print(f"innet: {e}", file=sys.stderr)
        return 2
    total = len(report.results)
    print(f"p4c v1model samples in {report.directory} ({executor} executor): {report.passed}/{total} pass "
          f"({100 * report.passed / max(total, 1):.1f}%)")
    for reason, names in report.failures_by_reason().items():
        print(f"{len(names):3d}  {reason}")
        for n in names:
            print(f"       {n}")
    return 0


def _cmd_p4c_errors(directory: Path) -> int:
    """Outcome counts on p4c's error corpus; outcomes are data (exit 0), a bad DIR is not."""
    from innet.p4c_errors import ErrorsDirError, Outcome, run_errors

    try:
        report = run_errors(directory)
    except ErrorsDirError as e:
        print(f"innet: {e}", file=sys.stderr)
        return 2
    for corpus in sorted({r.corpus for r in report.results}, reverse=True):
        counts = report.counts(corpus)
        print(f"{corpus} ({sum(counts.values())} programs): "
              + ", ".join(f"{o.value} {n}" for o, n in counts.items()))
    for r in report.results:
        if r.outcome is not Outcome.LOCATED:
            print(f"  {r.outcome.value:22s} {r.corpus}/{r.name}  {r.first_line[:160]}")
    return 0


def _cmd_conformance(args: argparse.Namespace) -> int:
    if args.p4c_errors is not None:
        return _cmd_p4c_errors(Path(args.p4c_errors))
    if args.p4c_samples is not None:
        return _cmd_p4c_samples(Path(args.p4c_samples), args.executor)
    dirs = [Path(d) for d in args.dirs] if args.dirs else default_suites()
    count = 0
    for d in dirs:
        found = len(stf_files(d)) if d.is_dir() else 0
        problem = ("is not a directory" if d.exists() and not d.is_dir() else "no such directory" if not d.is_dir()
                   else "holds no STF tests (NAME.stf beside NAME.p4)" if not found else None)
        if problem:
            print(f"innet conformance: error: suite {str(d)!r}: {problem}", file=sys.stderr)
            return 2
        count += found
    print(f"running {count} STF tests on the {args.executor} executor", flush=True)
    # The suites' programs wrap literals and the like on purpose; their front-end warnings
    # are the suite's business, not the user's, and show only with --verbose.
    frontend = logging.getLogger("innet.switch.frontend")
    level = frontend.level
    if not args.verbose:
        frontend.setLevel(logging.ERROR)
    try:
        report = run_suites(dirs, args.executor)
    finally:
        frontend.setLevel(level)
    _print_report(report, args.verbose)
    if report.interrupted:
        return interrupted("innet conformance")
    return 0 if report.failed == 0 else 1


# -- control plane (innet.controller): each command is a thin call into the API ---------


class InputError(ValueError):
    """A file given on the command line has the wrong content (says which file and why)."""


def _specs(args: argparse.Namespace, read_only: bool = False) -> list:  # type: ignore[type-arg]
    """Endpoints of --testbed/--switch (``innet.testbed.cli.live.endpoints``)."""
    from innet.testbed.cli.live import endpoints

    return endpoints(args, read_only)


def _inspect_optimizer(args: argparse.Namespace) -> int:
    from innet.testbed.luwu import status as luwu_status

    try:
        statuses = luwu_status.load(args.optimizer)
    except ValueError as error:
        print(f"innet: error: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([s.to_json() for s in statuses], indent=1))
    else:
        luwu_status.render(statuses, new_console())
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    from innet.controller.inspect import inspect_switch, render
    from innet.controller.switch import Switch

    if args.optimizer:
        return _inspect_optimizer(args)
    with Switch(_specs(args, read_only=True)[0]) as sw:
        report = inspect_switch(sw, [(name, args.range) for name in args.register], args.job)
    if args.json:
        print(json.dumps(report.to_json(), indent=1))
    else:
        render(report, new_console())
    return 0


def _cmd_pipeline_push(args: argparse.Namespace) -> int:
    from innet.controller.controller import Controller
    from innet.controller.pipeline import PipelineConfig

    from innet.testbed.cli.live import switch_impls

    # each switch gets the config its implementation runs (the testbed's state file says which;
    # a bare address: not known, the config as compiled), built before any connection
    configs = {impl: PipelineConfig.load(args.pipeline, dict(args.defines), switch_impl=impl)
               for impl in dict.fromkeys(switch_impls(args))}
    specs = _specs(args)
    with Controller(specs) as ctl:
        for impl, config in configs.items():
            ctl.push(config, [s.name for s in specs if s.switch_impl == impl])
    name = next(iter(configs.values())).name
    print(f"pushed {name} to {', '.join(s.address + (f' ({s.switch_impl})' if s.switch_impl else '') for s in specs)}")
    return 0


def _job_spec(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from innet.controller.jobs import JobSpec, OwnerSpec, WorkerSpec

    return JobSpec(args.job, tuple(WorkerSpec.parse(w) for w in args.worker), args.slot_base, args.slot_count or 1,
                   args.k or 64, args.mode, args.lr, args.beta, args.grad_frac_bits, args.param_frac_bits,
                   args.param_base, args.param_chunks, owners=tuple(OwnerSpec.parse(o) for o in args.owner))


def _cmd_job_create(args: argparse.Namespace) -> int:
    from innet.controller.controller import Controller
    from innet.controller.jobs import Forwarding

    job = _job_spec(args)
    with Controller(_specs(args)) as ctl:
        layout = ctl[ctl.names[0]].layout
        if args.k is None or args.slot_count is None:  # from the pipeline: another K never aggregates there
            from dataclasses import replace

            job = replace(job, k=layout.k if args.k is None else args.k,
                          slot_count=min(64, layout.slots - args.slot_base) if args.slot_count is None
                          else args.slot_count)
        if args.switch_ip:
            ctl.install_forwarding({n: Forwarding.for_workers(args.switch_mac, args.switch_ip, job.members(), n)
                                    for n in ctl.names})
        plan = ctl.create_job(job)
    for shard in plan.shards:
        print(f"job {job.job_id} on {shard.switch}: chunks {shard.first_chunk}+{shard.chunks}")
    for o in job.owners:
        print(f"job {job.job_id}: rank {o.rank} owns chunks {o.first_chunk}+{o.chunks}")
    return 0


def _cmd_job_attach(args: argparse.Namespace) -> int:
    from innet.controller.controller import Controller

    with Controller(_specs(args)) as ctl:
        epoch = ctl.attach(args.job)
    print(f"job {args.job}: worker set attached at epoch {epoch} (give it to every agent of the set)")
    return 0


def _cmd_job_destroy(args: argparse.Namespace) -> int:
    from innet.controller.controller import Controller

    with Controller(_specs(args)) as ctl:
        names = ctl.destroy_job(args.job)
    print(f"job {args.job} destroyed on {', '.join(names)}")
    return 0


def _cmd_job_list(args: argparse.Namespace) -> int:
    import dataclasses

    from innet.controller.innet_switch import InnetSwitch
    from innet.controller.switch import Switch

    out = {}
    labels = {}  # the testbed's name beside the address, as `innet table` says it
    for spec in _specs(args, read_only=True):
        labels[spec.address] = spec.address if spec.name == spec.address else f"{spec.name} ({spec.address})"
        with Switch(spec) as sw:
            node = InnetSwitch(sw)
            node.layout  # another program: "not innet.p4", before its tables are searched for innet's
            out[spec.address] = [{**dataclasses.asdict(j), "owners": [dataclasses.asdict(o) for o in node.owners(j.job_id)]}
                                 for j in node.jobs()]

    def owners(j: dict[str, Any]) -> str:
        return (" owners=" + ",".join(f"{o['rank']}:{o['first_chunk']}+{o['chunks']}" for o in j["owners"])
                if j["owners"] else "")

    print(json.dumps(out, indent=1) if args.json else "\n".join(
        f"{labels[a]}: job {j['job_id']} {j['mode']} workers={j['num_workers']} slots={j['slot_base']}+{j['slot_count']} "
        f"params={j['param_base']}+{j['param_chunks']} epoch={j['epoch']}{owners(j)}" for a, js in out.items() for j in js)
        or "no jobs")
    return 0


def _cmd_params_load(args: argparse.Namespace) -> int:
    from innet.controller.controller import Controller

    values = _load_vector(args.file)
    with Controller(_specs(args)) as ctl:
        ctl.load_params(args.job, values, args.param_frac_bits)
        k = ctl[ctl.names[0]].layout.k
    chunks = -(-values.size // k)
    pad = chunks * k - values.size
    print(f"loaded {values.size} parameters ({values.dtype}) into job {args.job}: {chunks} chunks of K={k}"
          + (f", the last {pad} values zero (params read --size {values.size} returns exactly these)" if pad else ""))
    return 0


def _load_vector(path: Path) -> npt.NDArray[Any]:
    """A numeric array from a ``.npy`` file (never unpickles); InputError otherwise."""
    import numpy as np

    with path.open("rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise InputError(f"{path}: not a NumPy .npy file (no \\x93NUMPY magic at the start)")
        f.seek(0)
        try:
            values = np.lib.format.read_array(f, allow_pickle=False)
        except (ValueError, EOFError) as error:
            raise InputError(f"{path}: unreadable .npy file: {error}") from None
    if values.dtype.kind not in "iuf":
        raise InputError(f"{path}: array of {values.dtype} values; parameters must be integers or floats")
    return values


def _cmd_params_read(args: argparse.Namespace) -> int:
    import numpy as np

    from innet.controller.controller import Controller
    from innet.controller.errors import ControllerError

    with Controller(_specs(args, read_only=True)) as ctl:
        values = ctl.read_params(args.job, not args.raw, args.size, args.param_frac_bits)
    if values.size == 0:
        raise ControllerError(f"job {args.job} holds no parameters on the switch (a sum job, or --param-chunks 0): "
                              "nothing to read")
    if args.output:
        np.save(args.output, values)
    else:
        print(" ".join(str(v) for v in values.tolist()))
    if args.size is None:
        print(f"({values.size} values: every chunk of the job; --size N for the first N)", file=sys.stderr)
    return 0


def _add_switch_args(p: argparse.ArgumentParser, many: bool = False) -> None:
    from innet.testbed.cli.live import add_target_args

    add_target_args(p, many)


def _range_text(text: str) -> str:
    """``--range A:B`` as ``innet.controller.inspect.parse_range`` reads it; an empty range is refused here."""
    low, sep, high = text.partition(":")
    if sep and low and high:
        try:
            start, stop = int(low, 0), int(high, 0)
        except ValueError:
            return text  # parse_range names what is wrong
        if stop <= start:
            raise argparse.ArgumentTypeError(f"{text!r} is empty: A:B means indices A..B-1, so B must exceed A")
    return text


def _add_job_id(p: argparse.ArgumentParser) -> None:
    p.add_argument("--job", type=int_range(1), required=True, help="job id (the innet header's job field)")


def _add_control_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    ins = sub.add_parser("inspect", help="show jobs, slot occupancy, counters and registers of a switch")
    _add_switch_args(ins)
    ins.add_argument("--json", action="store_true", help="print JSON instead of tables")
    ins.add_argument("--register", action="append", default=[], metavar="NAME", help="also dump this register")
    ins.add_argument("--range", type=_range_text, default=None, metavar="A:B",
                     help="index range A..B-1 of --register (default all)")
    ins.add_argument("--job", type=int, default=None, help="only this job")
    ins.add_argument("--optimizer", action="append", type=Path, default=[], metavar="DIR",
                     help="show the LuWu optimizer node whose state directory is DIR (repeatable) instead of a switch")
    ins.set_defaults(func=_cmd_inspect)

    pipe = sub.add_parser("pipeline", help="push a P4 pipeline").add_subparsers(dest="action", required=True)
    push = pipe.add_parser("push", help="push an innet-p4c output directory or a .p4 file (compiled on the fly)")
    _add_switch_args(push, many=True)
    push.add_argument("pipeline", type=Path, help="directory or .p4 file")
    push.add_argument("-D", dest="defines", action="append", default=[], type=_define, metavar="NAME[=VAL]",
                      help="a .p4 file: define a preprocessor macro, e.g. -D INNET_K=256 (repeatable)")
    push.set_defaults(func=_cmd_pipeline_push)

    job = sub.add_parser("job", help="create, attach, destroy or list aggregation jobs").add_subparsers(dest="action", required=True)
    create = job.add_parser("create", help="install a job (parameters sharded across the --switch list)")
    _add_switch_args(create, many=True)
    _add_job_id(create)
    create.add_argument("--worker", action="append", required=True, metavar="RANK,PORT,MAC,IP,UDP_PORT",
                        help="a worker: its rank, switch port, MAC, IP and UDP port (repeat for each)")
    create.add_argument("--slot-base", type=int_range(0), default=0, help="first slot of the job's range")
    create.add_argument("--slot-count", type=int_range(1), default=None,
                        help="slots of the job, the agents' window (default: 64, fewer when the pipeline has fewer)")
    add_values_per_packet(create, help_text="values per packet (default: the pipeline's INNET_K, read from its P4Info)")
    create.add_argument("--mode", choices=("sum", "sgd", "momentum"), default="sum",
                        help="sum: allreduce; sgd/momentum: the switch updates the parameters")
    create.add_argument("--lr", type=float, default=0.0, help="sgd/momentum: learning rate")
    create.add_argument("--beta", type=float, default=0.0, help="momentum: coefficient in [0, 1)")
    create.add_argument("--grad-frac-bits", type=int, default=16, help="fractional bits of the int32 gradients")
    create.add_argument("--param-frac-bits", type=int, default=16, help="fractional bits of the int32 parameters")
    create.add_argument("--param-base", type=int, default=0, help="first parameter chunk (register index) of the job")
    create.add_argument("--param-chunks", type=int, default=0, help="chunks of K parameters (sgd/momentum; sharded)")
    create.add_argument("--owner", action="append", default=[], metavar="RANK,PORT,MAC,IP,UDP_PORT,FIRST_CHUNK,CHUNKS",
                        help="a member (rank after the workers') owning chunks FIRST_CHUNK.. for REDUCE/BCAST "
                             "(sum mode; repeatable)")
    create.add_argument("--switch-ip", default=None, help="also install forwarding: the switch's innet IP")
    create.add_argument("--switch-mac", default="00:00:00:00:00:fe", help="the switch's MAC (with --switch-ip)")
    create.set_defaults(func=_cmd_job_create)
    attach = job.add_parser("attach", help="start a new worker set of a job: prints its epoch (earlier sets are refused)")
    _add_switch_args(attach, many=True)
    _add_job_id(attach)
    attach.set_defaults(func=_cmd_job_attach)
    destroy = job.add_parser("destroy", help="remove a job and zero its registers and counters")
    _add_switch_args(destroy, many=True)
    _add_job_id(destroy)
    destroy.set_defaults(func=_cmd_job_destroy)
    lst = job.add_parser("list", help="list the jobs of each switch")
    _add_switch_args(lst, many=True)
    lst.add_argument("--json", action="store_true", help="print JSON instead of lines")
    lst.set_defaults(func=_cmd_job_list)

    params = sub.add_parser("params", help="load or read a job's parameters").add_subparsers(dest="action", required=True)
    load = params.add_parser("load", help="load a .npy vector (float: quantized; int: fixed point as is)")
    _add_switch_args(load, many=True)
    _add_job_id(load)
    load.add_argument("--param-frac-bits", type=int, default=16, help="fractional bits of the stored int32 parameters")
    load.add_argument("file", type=input_file, help=".npy file of the parameters (at most the job's chunks x K)")
    load.set_defaults(func=_cmd_params_load)
    read = params.add_parser("read", help="read the parameter vector (float unless --raw)")
    _add_switch_args(read, many=True)
    _add_job_id(read)
    read.add_argument("--param-frac-bits", type=int, default=16, help="fractional bits of the stored int32 parameters")
    read.add_argument("--raw", action="store_true", help="int32 fixed point")
    read.add_argument("--size", type=int_range(1), default=None,
                      help="elements to return (default: every chunk of the job, chunks x K; a load pads the "
                           "last chunk with zeros)")
    read.add_argument("-o", "--output", type=Path, default=None, help="write a .npy file instead of printing")
    read.set_defaults(func=_cmd_params_read)


def _define(text: str) -> tuple[str, str | None]:
    name, sep, value = text.partition("=")
    return name, (value if sep else None)


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = CommandParser(prog="innet", description="In-network aggregation on P4 software switches.")
    parser.add_argument("--version", action="version", version=f"innet {_version()}", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    add_testbed_commands(sub)  # demo, bench, testbed (innet.testbed.cli.commands)
    add_model_commands(sub)
    add_geo_commands(sub)  # geo plan, geo bench (innet.testbed.cli.geo)
    conf = sub.add_parser("conformance", help="run STF suites (directories of NAME.p4 + NAME.stf)")
    conf.add_argument("dirs", nargs="*", help="suite directories (default: p4/ and tests/conformance/, the BMv2-confirmed corpus included)")
    conf.add_argument("-v", "--verbose", action="store_true", help="list every test, not only failures")
    conf.add_argument("--p4c-samples", metavar="DIR",
                      help="run p4c's v1model STF samples (testdata/p4_16_samples, or a p4c checkout) "
                           "named in tests/conformance/bmv2/p4c-samples-bmv2-pass.txt instead of the suites")
    conf.add_argument("--p4c-errors", metavar="DIR",
                      help="compile p4c's error corpus (testdata/p4_16_errors and p4_16_bmv_errors, or a p4c "
                           "checkout) as innet-p4c does and count the outcomes: rejected-located, "
                           "rejected-unlocated, accepted-with-warning, accepted, traceback")
    add_executor(conf, default=STF_EXECUTOR, what="packet executor the tests run on (as innet-stf's; native: a "
                                                  "program it refuses fails with the refusal)")
    conf.set_defaults(func=_cmd_conformance)
    _add_control_commands(sub)
    add_live_commands(sub)  # table, counter, register (innet.testbed.cli.live)
    add_cluster_commands(sub)  # cluster up/status/logs/down, cluster image push (innet.testbed.cli.cluster)
    for p in command_parsers(parser):  # the innermost command's name, for its messages
        p.set_defaults(_prog=p.prog)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("innet")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _errors() -> tuple[type[BaseException], ...]:
    """The library errors a command may end with: one line, exit status 1 (``run_command``)."""
    from innet.controller.errors import ControllerError
    from innet.wire.quantize import QuantizeError
    from innet.testbed.core.testbed import TestbedError

    return ControllerError, QuantizeError, TestbedError, InputError


def main(argv: list[str] | None = None) -> int:
    """Parse, check ``--out`` before any work, run the command; the exit status
    (``innet.argtypes.run_command``: the one mapping of outcomes to statuses)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if getattr(args, "_many", None) is not None and isinstance(args.switch, str):  # control commands
        args.switch = [args.switch]
    words = sys.argv[1:] if argv is None else list(argv)
    args.given = given_options(parser, words)
    if (misplaced := _before_benchmark_name(args, words)) is not None:
        print(f"{_prog(args)}: error: {misplaced} comes before {args.bench_name}, so it is innet bench's own "
              f"option, not {args.bench_name}'s: give it after the name", file=sys.stderr)
        return EXIT_USAGE
    out = getattr(args, "out", None)
    if isinstance(out, Path) and (problem := prepare_out(out)) is not None:
        print(f"{_prog(args)}: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    return run_command(_prog(args), lambda: int(args.func(args)), _errors())


def _before_benchmark_name(args: argparse.Namespace, words: list[str]) -> str | None:
    """The first option between ``bench`` and a benchmark's NAME (it would set the allreduce
    benchmark's option, which NAME then ignores), or None."""
    name = getattr(args, "bench_name", None)
    if not isinstance(name, str) or "bench" not in words:
        return None
    start = words.index("bench") + 1
    between = words[start:words.index(name, start)] if name in words[start:] else []
    return next((w for w in between if w.startswith("-")), None)


def _prog(args: argparse.Namespace) -> str:
    """``innet COMMAND [ACTION]`` of the parsed command line, for messages."""
    return str(getattr(args, "_prog", "innet"))


if __name__ == "__main__":
    sys.exit(main())
