"""argparse ``type=`` converters, shared options and the exit statuses of every innet command line.

Why one module: each CLI (``innet``, ``innet-switch``, ``innet-p4c``, ``innet-stf``) takes
paths, addresses and bounded numbers, and a bad value must give the same one-line,
named error everywhere, at parse time, before anything starts. argparse turns an
``ArgumentTypeError`` into ``<prog>: error: argument <flag>: <message>`` and exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

UINT64_MAX = (1 << 64) - 1
UINT128_MAX = (1 << 128) - 1


def input_file(text: str) -> Path:
    """A file to read: it must exist and must not be a directory."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory, not a file")
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text!r}: no such file")
    return path


def output_dir(text: str) -> Path:
    """A directory to write into (created later if missing); an existing non-directory is refused."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a directory")
    return path


def parse_host_port(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6addr]:PORT`` too) with PORT in 0..65535; ValueError says what is wrong."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{text!r}: expected HOST:PORT")
    if not port.isdigit():
        raise ValueError(f"{text!r}: port {port!r} is not a number")
    number = int(port)
    if number > 65535:
        raise ValueError(f"{text!r}: port {number} is outside 0..65535")
    return host, number


def host_port(text: str) -> str:
    """argparse type for ``HOST:PORT``; returns the text unchanged once it is valid."""
    try:
        parse_host_port(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def int_range(low: int, high: int | None = None) -> Callable[[str], int]:
    """argparse type: an integer (decimal or 0x..) within ``low..high`` (no upper bound: None)."""

    def convert(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            try:
                value = int(text)  # decimal with leading zeros
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low or (high is not None and value > high):
            bound = f"{low}..{high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"{value} is outside {bound}")
        return value

    convert.__name__ = "integer"
    return convert


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (timeouts, durations)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a number > 0")
    return value




def sizes(text: str) -> tuple[int, ...]:
    """``1K,64K,1M`` -> (1024, 65536, 1048576)."""
    out = []
    for part in text.split(","):
        part = part.strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20}.get(part[-1:], 1)
        number = part[:-1] if scale != 1 else part
        try:
            out.append(int(number) * scale)
        except ValueError:
            raise argparse.ArgumentTypeError(f"size {part!r}: expected a number with optional K or M") from None
    return tuple(out)


def int_list(text: str) -> tuple[int, ...]:
    """``2,4,8`` -> (2, 4, 8)."""
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated integers") from None


def float_list(text: str) -> tuple[float, ...]:
    """``0,0.5`` -> (0.0, 0.5)."""
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated numbers") from None


# -- the options every innet command line shares, defined once ------------------------------

BACKENDS = ("auto", "mininet", "loopback")
EXECUTORS = ("auto", "native", "python")
TOPOLOGIES = ("star", "rail-only", "rail-optimized")
SWITCH_IMPLS = ("innet", "bmv2")
STF_EXECUTOR = "python"
"""The executor ``innet conformance`` and ``innet-stf`` run STF tests on by default: the
reference, so a test that fails there is a front-end or executor bug, not a C-backend one."""

_RST = re.compile(r":[a-z]+:`~?([^`]+)`|``([^`]+)``|`([^`]+)`")


def plain(text: str) -> str:
    """``text`` without reStructuredText markup (docstrings double as help text)."""
    return _RST.sub(lambda m: next(g for g in m.groups() if g is not None), text)


def _shown(value: object) -> str:
    if isinstance(value, (tuple, list)):
        return ",".join(_shown(v) for v in value)
    return str(value)


class HelpFormatter(argparse.HelpFormatter):
    """Plain help that shows every option's default (unless its help already says it)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = plain(action.help or "")
        default = action.default
        if (text == argparse.SUPPRESS or "default" in text.lower() or not action.option_strings
                or default is None or default is False or default == [] or default == ()
                or default == argparse.SUPPRESS or isinstance(action, argparse._VersionAction)):
            return text
        return f"{text} (default: {_shown(default).replace('%', '%%')})"

    def _format_text(self, text: str) -> str:
        return super()._format_text(plain(text))


class CommandParser(argparse.ArgumentParser):
    """An ``argparse.ArgumentParser`` with innet's plain help (sub-commands inherit it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("formatter_class") in (None, argparse.HelpFormatter):
            kwargs["formatter_class"] = HelpFormatter
        elif kwargs["formatter_class"] is argparse.RawDescriptionHelpFormatter:
            kwargs["formatter_class"] = _RawDescriptionFormatter
        super().__init__(*args, **kwargs)


class _RawDescriptionFormatter(HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown, description and epilog kept as written (lists of names)."""


class _DeprecatedBackend(argparse.Action):
    """``--mininet``/``--loopback``: the old spellings of ``--backend``; they still work and say so."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        backend = (option_string or "--loopback").lstrip("-")
        print(f"{parser.prog}: warning: {option_string} is deprecated; use --backend {backend}", file=sys.stderr)
        setattr(namespace, self.dest, backend)


def add_backend(parser: argparse.ArgumentParser, default: str = "auto", note: str = "") -> None:
    """``--backend {auto,mininet,loopback}`` (and its deprecated spellings ``--mininet``/``--loopback``)."""
    parser.add_argument("--backend", choices=BACKENDS, default=default,
                        help="network: mininet (root), loopback (UDP ports on 127.0.0.1, no root) or auto "
                             "(Mininet when root, else loopback)" + note)
    for name in ("mininet", "loopback"):
        parser.add_argument(f"--{name}", dest="backend", action=_DeprecatedBackend, default=argparse.SUPPRESS,
                            help=f"deprecated: same as --backend {name}")


def add_executor(parser: argparse.ArgumentParser, default: str = "auto", what: str = "switch packet executor") -> None:
    """``--executor {auto,native,python}``."""
    parser.add_argument("--executor", choices=EXECUTORS, default=default,
                        help=f"{what}: native (generated C), python (the reference) or auto (native when a C "
                             "compiler is present and the program is supported)")


def add_out(parser: argparse.ArgumentParser, what: str = "JSON and plots") -> None:
    """``--out DIR`` (created and checked writable before any work: ``prepare_out``)."""
    parser.add_argument("--out", type=output_dir, default=Path("results"), metavar="DIR",
                        help=f"directory for the {what} (created if missing)")


def prepare_out(path: Path) -> str | None:
    """Create ``path`` and check that a file can be written in it; None, or what is wrong
    (said before a run, not after it)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".innet-write-check-"):
            pass
    except OSError as error:
        return f"--out {str(path)!r}: not a writable directory ({error.strerror or error})"
    return None


def add_values_per_packet(parser: argparse.ArgumentParser, default: int | None = None,
                          choices: tuple[int, ...] | None = None, several: bool = False,
                          help_text: str | None = None) -> None:
    """``-k/--values-per-packet`` (INNET_K, the int32 values one innet packet carries)."""
    text = help_text or ("values per packet (INNET_K)" + ("; repeatable" if several else "")
                         + ("" if default is not None else "; default: the largest whose frame fits the MTU"))
    parser.add_argument("-k", "--values-per-packet", dest="k", type=int, default=default,
                        action="append" if several else "store",
                        choices=list(choices) if choices else None, metavar="K", help=text)


def add_topo(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--topo {star,rail-only,rail-optimized}``."""
    parser.add_argument("--topo", choices=TOPOLOGIES, default="star", help=help_text)


def add_workers(parser: argparse.ArgumentParser, default: int | tuple[int, ...], help_text: str,
                minimum: int = 1) -> None:
    """``--workers N`` (one run) or ``--workers 2,4,8`` (a benchmark: a tuple default)."""
    parser.add_argument("--workers", type=int_list if isinstance(default, tuple) else int_range(minimum),
                        default=default, metavar="N,..." if isinstance(default, tuple) else "N", help=help_text)


def impl_list(text: str) -> tuple[str, ...]:
    """``--switch-impl`` of a benchmark: ``innet``, ``bmv2`` or both comma-separated."""
    impls = tuple(t.strip() for t in text.split(","))
    if not all(impls) or any(i not in SWITCH_IMPLS for i in impls) or len(set(impls)) != len(impls):
        raise argparse.ArgumentTypeError(f"{text!r}: expected innet, bmv2 or innet,bmv2")
    return impls


def add_switch_impl(parser: argparse.ArgumentParser, several: bool = False, note: str = "") -> None:
    """``--switch-impl``: one switch (``innet``/``bmv2``) or, for a benchmark (``several``), a
    comma-separated list whose rows are measured side by side."""
    needs = "needs BMv2 and p4c: PATH, INNET_BMV2_BIN, INNET_P4C, /opt/p4tools"
    if several:
        parser.add_argument("--switch-impl", type=impl_list, default=("innet",), metavar="IMPL[,IMPL]",
                            help="switch(es): innet, bmv2 (p4lang's simple_switch_grpc; " + needs + ") or "
                                 "innet,bmv2 (both, rows labelled; BMv2 absent: said, innet rows only)" + note)
    else:
        parser.add_argument("--switch-impl", choices=SWITCH_IMPLS, default="innet",
                            help=f"switch: innet's embedded target or p4lang's simple_switch_grpc ({needs})" + note)


def command_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every sub-command parser below it."""
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                out += command_parsers(child)
    return out


def given_options(parser: argparse.ArgumentParser, argv: list[str]) -> set[str]:
    """The ``dest`` of every option ``argv`` gives explicitly (a default is not given): a
    command refuses a flag that does not apply to the chosen mode instead of ignoring it."""
    import contextlib
    import io

    saved = [(p, p._defaults, [(a, a.default) for a in p._actions]) for p in command_parsers(parser)]
    try:
        for p, _, actions in saved:
            p._defaults = {}
            for a, _ in actions:
                a.default = argparse.SUPPRESS
        with contextlib.redirect_stderr(io.StringIO()):  # said once, by the real parse
            namespace = parser.parse_args(argv)
    finally:
        for p, defaults, actions in saved:
            p._defaults = defaults
            for a, default in actions:
                a.default = default
    return {dest for dest, value in vars(namespace).items() if value is not argparse.SUPPRESS}


def not_applicable(args: argparse.Namespace, dests: tuple[str, ...], why: str) -> None:
    """Raise UsageError naming the first of ``dests`` given on the command line (``args.given``)."""
    given: set[str] = getattr(args, "given", set())
    for dest in dests:
        if dest in given:
            flag = "-k" if dest == "k" else "--" + dest.replace("_", "-")
            raise UsageError(f"{flag} does not apply {why}")


def console() -> Any:
    """A rich Console: as is on a terminal; piped or redirected, wide enough that no table
    cell is cut (rich sizes a table to its content, so nothing is padded)."""
    from rich.console import Console

    terminal = Console()
    return terminal if terminal.is_terminal else Console(width=100_000)


class Reporter:
    """Progress of a long command: every message a line (a log keeps them); on a terminal
    also a live bar under them, with a spinner, the latest message, the count when ``total``
    is known, and the elapsed time. Use as a context manager; call it with each message."""

    def __init__(self, out: Any, what: str, total: int | None = None,
                 counts: Callable[[str], bool] = lambda message: False, markup: bool = True) -> None:
        self.out, self.what, self.total, self.counts, self.markup = out, what, total, counts, markup
        self.bar: Any = None

    def __enter__(self) -> "Reporter":
        if self.out.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, \
                TimeElapsedColumn

            columns = [SpinnerColumn(), TextColumn("{task.description}")]
            if self.total:
                columns += [BarColumn(), MofNCompleteColumn()]
            self.bar = Progress(*columns, TimeElapsedColumn(), console=self.out, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.what, total=self.total)
        return self

    def __call__(self, message: str) -> None:
        from rich.text import Text

        self.out.print(f"[dim]{message}[/]" if self.markup else Text(message, style="dim"))
        if self.bar is not None:
            text = plain_markup(message) if self.markup else message
            self.bar.update(self.task, description=f"{self.what}: {text.splitlines()[0][:60] if text else ''}",
                            advance=1 if self.counts(message) else 0)

    def advance(self) -> None:
        """One of ``total`` done (the bar only; no line)."""
        if self.bar is not None:
            self.bar.advance(self.task)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def measure_each(what: str, points: Sequence[T], measure: Callable[[T], R],
                 name: Callable[[T], str] = str, out: Any = None) -> tuple[list[R], bool]:
    """``measure(point)`` for each point in turn, under a progress bar naming the one running
    (a terminal only; a log gets a line per point): the results and False, or, on Ctrl-C, the
    results measured so far and True (the caller writes them marked ``"partial": true`` and
    ends with :func:`interrupted_partial`)."""
    results: list[R] = []
    with Reporter(out if out is not None else console(), what, total=len(points), markup=False) as report:
        try:
            for point in points:
                report(name(point))
                results.append(measure(point))
                report.advance()
        except KeyboardInterrupt:
            return results, True
    return results, False


def interrupted_partial(prog: str, path: object) -> int:
    """Ctrl-C after ``path`` was written with what ran before it: the one line; exit 130."""
    return interrupted(prog, f"{path} (marked \"partial\": true)")


@contextlib.contextmanager
def brought_up(resource: Any, progress: Reporter) -> Iterator[Any]:
    """Enter ``resource`` (a testbed) with ``progress`` shown only while it comes up; leave it
    (tear it down) when the ``with`` ends, Ctrl-C included. Yields the entered resource."""
    with contextlib.ExitStack() as stack:
        with progress:
            entered = stack.enter_context(resource)
        yield entered


def plain_markup(text: str) -> str:
    """``text`` without rich markup (``[red]...[/]``)."""
    from rich.text import Text

    return Text.from_markup(text).plain


# -- the one mapping from an outcome to an exit status --------------------------------------

EXIT_OK = 0
EXIT_ERROR = 1
"""The command ran and failed (a wrong result, a switch or testbed that broke)."""
EXIT_USAGE = 2
"""Bad command line or input, said in one line before anything ran."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT), as shells report it."""


class UsageError(ValueError):
    """A command line that cannot run as given (a flag that does not apply, a bad value)."""


def interrupted(prog: str, partial: str | None = None) -> int:
    """One line for Ctrl-C (naming the partial results written, if any); the exit status."""
    print(f"\n{prog}: interrupted" + (f"; partial results in {partial}" if partial else ""), file=sys.stderr)
    return EXIT_INTERRUPTED


def run_command(prog: str, call: Callable[[], int], errors: tuple[type[BaseException], ...] = ()) -> int:
    """``call()``'s exit status, or the one mapping of an exception to a status and one line:
    Ctrl-C 130, UsageError and a config's ValueError 2, OSError and the command's own ``errors`` 1, each after one
    message on stderr. No traceback."""
    try:
        return call()
    except KeyboardInterrupt:
        return interrupted(prog)
    except (OSError, *errors) as error:  # type: ignore[misc]  # a tuple of exception classes
        print(f"{prog}: error: {str(error) or type(error).__name__}", file=sys.stderr)
        return EXIT_ERROR
    except ValueError as error:  # UsageError, and a config's check of a value (names the option)
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EXIT_USAGE


__all__ = ["BACKENDS", "CommandParser", "EXECUTORS", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE",
           "HelpFormatter", "Reporter", "STF_EXECUTOR", "SWITCH_IMPLS", "TOPOLOGIES", "UINT128_MAX", "UINT64_MAX",
           "UsageError", "add_backend", "add_executor", "add_out", "add_switch_impl", "add_topo",
           "add_values_per_packet", "add_workers", "brought_up", "command_parsers", "console", "float_list",
           "given_options",
           "host_port", "impl_list", "input_file", "int_list", "int_range", "interrupted", "interrupted_partial",
           "measure_each", "not_applicable",
           "output_dir", "parse_host_port", "plain", "plain_markup", "positive_float", "prepare_out", "run_command",
           "sizes"]
