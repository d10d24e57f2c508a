"""Finding and changing live testbeds from the command line.

``innet testbed status`` (or ``ls``) lists the running testbeds from their state files
(:mod:`innet.testbed.core.state`); ``innet testbed down NAME`` stops one. Every command
that talks to a switch takes ``--testbed NAME --switch s1`` as well as ``--switch
HOST:PORT``: :func:`endpoints` turns either into controller endpoints, so ``innet inspect``,
``job``, ``params``, ``pipeline`` and the generic ``innet table`` / ``counter`` /
``register`` (any table, counter or register of any program, like ``simple_switch_CLI``'s
``table_add``, ``table_dump``, ``counter_read``, ``register_read``) address a switch the
same way.

Write sessions without ``--election-id`` arbitrate in a P4Runtime role of their own
(``innet-cli``) with a fresh election id, so they are primary beside a testbed's own
controller (default role, election id 1) and leave its primary alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from innet.argtypes import UINT64_MAX, UINT128_MAX, input_file, int_range, parse_host_port, positive_float

EXIT_ERROR = 1
DEFAULT_ADDRESS = "127.0.0.1:9559"
"""P4Runtime address used without ``--switch``/``--testbed``: the first switch of the first
testbed (switch ``n`` of a testbed listens on 9559+n when free)."""


@dataclass(frozen=True)
class SwitchTarget:
    """One switch to talk to: from ``--switch HOST:PORT`` or from a testbed's state file."""

    name: str
    """Name in its testbed (``s1``), or ``s<i>`` for the i-th ``--switch`` address."""
    address: str
    """P4Runtime HOST:PORT."""
    device_id: int | None = None
    """From the state file; None: ``--device-id``."""
    thrift: str | None = None
    """BMv2: its Thrift HOST:PORT (registers through simple_switch_CLI)."""
    testbed: str | None = None
    """The testbed it belongs to, when found by name."""
    impl: str | None = None
    """From the state file: ``innet`` or ``bmv2``, so a pushed pipeline is the config that
    switch runs (``PipelineConfig.load(..., switch_impl)``); None: an address, not known."""


SWITCH_NAME = re.compile(r"[a-z][a-z0-9]{0,7}")
"""A topology's switch name (``innet.testbed.core.topology``: at most 8 characters)."""


def switch_ref(text: str) -> str:
    """argparse type of ``--switch``: HOST:PORT, or a switch name of a testbed (``s1``)."""
    if ":" in text or not SWITCH_NAME.fullmatch(text):
        try:
            parse_host_port(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{error}, or a testbed's switch name such as s1"
                                             if "expected HOST:PORT" in str(error) else str(error)) from None
    return text


def _is_address(text: str) -> bool:
    try:
        parse_host_port(text)
        return True
    except ValueError:
        return False


def resolve(testbed: str | None, switches: list[str] | None, many: bool = True) -> list[SwitchTarget]:
    """The switches named by ``--testbed`` and ``--switch`` (HOST:PORT addresses, or switch
    names of the testbed: of the only running one when ``--testbed`` is left out); without
    either, DEFAULT_ADDRESS. Raises TestbedStateError naming what exists."""
    from innet.testbed.core.state import TestbedStateError, find_testbed

    given = list(switches or [])
    addresses = [s for s in given if _is_address(s)]
    names = [s for s in given if not _is_address(s)]
    if addresses and (names or testbed is not None):
        raise TestbedStateError("--switch: give switch names of a testbed (--testbed NAME --switch s1) or "
                                f"HOST:PORT addresses, not both ({', '.join(given)}"
                                + (f", --testbed {testbed})" if testbed else ")"))
    if not given and testbed is None:
        return [SwitchTarget(DEFAULT_ADDRESS, DEFAULT_ADDRESS)]
    if addresses:  # named by address: an index would differ from the testbed's s1, s2, ...
        return [SwitchTarget(a, a) for a in addresses]
    state = find_testbed(testbed)
    if not names:
        chosen = list(state.switches) if many else [state.switch(None)]
    else:
        chosen = [state.switch(n) for n in names]
    return [SwitchTarget(s.name, s.p4runtime, s.device_id, s.thrift, state.name, s.impl) for s in chosen]


def check_listening(address: str, timeout: float) -> None:
    """Fail at once (SwitchUnreachableError) when nothing listens at ``address`` (connection
    refused), naming the running testbeds' switches; other failures are left to gRPC's deadline."""
    from innet.controller.errors import SwitchUnreachableError
    from innet.testbed.core.state import live_states

    host, port = parse_host_port(address)
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=min(timeout, 2.0)):
            return
    except ConnectionRefusedError:
        pass
    except OSError:
        return
    running = [f"{s.name} {sw.name} {sw.p4runtime}" for s in live_states() for sw in s.switches]
    raise SwitchUnreachableError(
        f"switch {address}: connection refused (no P4Runtime server listens there); "
        + (f"running testbeds' switches: {'; '.join(running)} (use --testbed NAME --switch NAME)" if running
           else "no testbed is running (innet testbed up) and no switch listens at that address"))


def _targets(args: argparse.Namespace) -> list[SwitchTarget]:
    """:func:`resolve` of the command's options; a ControllerError naming what exists."""
    from innet.testbed.core.state import TestbedStateError

    try:
        return resolve(args.testbed, args.switch, many=args._many)
    except TestbedStateError as error:
        from innet.controller.errors import ControllerError

        raise ControllerError(str(error)) from None


def switch_impls(args: argparse.Namespace) -> list[str | None]:
    """The implementation of each of the command's switches (from the testbed's state file;
    None for an address), read before connecting: a pipeline is built for them first."""
    return [t.impl for t in _targets(args)]


def endpoints(args: argparse.Namespace, read_only: bool = False) -> list[Any]:
    """Controller endpoints of the command's switches (:func:`add_target_args` options):
    writes in role ``innet-cli`` with a fresh election id unless ``--election-id`` is given."""
    from innet.controller.client import CLI_ROLE, fresh_election_id
    from innet.controller.switch import SwitchEndpoint

    targets = _targets(args)
    role, election = "", args.election_id
    if read_only:
        election = None
    elif election is None:
        role, election = CLI_ROLE, fresh_election_id()
    specs = []
    for t in targets:
        check_listening(t.address, args.timeout)
        thrift_port = args.thrift_port if t.thrift is None else int(t.thrift.rpartition(":")[2])
        spec = SwitchEndpoint(t.name, t.address, args.device_id if t.device_id is None else t.device_id,
                              election_id=election, thrift_port=thrift_port, timeout=args.timeout,
                              tls=_tls(args), p4runtime_role=role, switch_impl=t.impl)
        if thrift_port is not None:  # BMv2's register fallback: its CLI where the backend finds it
            from innet.testbed.backends.bmv2 import cli_path

            spec = replace(spec, thrift_cli=cli_path(), registers="thrift" if t.thrift else "auto")
        specs.append(spec)
    return specs


def _tls(args: argparse.Namespace) -> Any:
    """ClientTls from --grpc-tls/--grpc-ca-cert/--grpc-client-cert/--grpc-client-key, None without them."""
    from innet.controller.tls import ClientTls

    if not (args.grpc_tls or args.grpc_ca_cert or args.grpc_client_cert or args.grpc_client_key):
        return None
    return ClientTls(args.grpc_ca_cert, args.grpc_client_cert, args.grpc_client_key, args.grpc_server_name)


def add_target_args(p: argparse.ArgumentParser, many: bool = False) -> None:
    """``--testbed``, ``--switch`` and the session options of a command that talks to switches."""
    p.add_argument("--testbed", default=None, metavar="NAME",
                   help="a running testbed (innet testbed status); --switch then names its switches "
                        "(default: the only running testbed when --switch names a switch)")
    p.add_argument("--switch", action="append" if many else "store", default=None, metavar="NAME|HOST:PORT",
                   type=switch_ref,
                   help=f"a switch of the testbed (s1) or a P4Runtime address (default {DEFAULT_ADDRESS}, or "
                        "with --testbed " + ("every switch of it" if many else "its only switch") + ")"
                        + ("; repeat for several switches" if many else ""))
    p.add_argument("--device-id", type=int_range(0, UINT64_MAX), default=1,
                   help="P4Runtime device id (default 1; a testbed's switches: from its state file)")
    p.add_argument("--election-id", type=int_range(0, UINT128_MAX), default=None,
                   help="election id for writes in the default role (default: a fresh one in role "
                        "'innet-cli', which works beside a testbed's own controller)")
    p.add_argument("--thrift-port", type=int_range(1, 65535), default=None,
                   help="BMv2 Thrift port: registers via simple_switch_CLI (a testbed's BMv2 switches: from its state file)")
    p.add_argument("--timeout", type=positive_float, default=10.0, help="seconds to wait for the switch (default 10)")
    p.add_argument("--grpc-tls", action="store_true",
                   help="TLS to a switch started with --grpc-server-ssl (implied by the --grpc-* files below)")
    p.add_argument("--grpc-ca-cert", type=input_file, default=None, metavar="PEM",
                   help="CA certificate the switch's certificate must chain to (default: the system's)")
    p.add_argument("--grpc-client-cert", type=input_file, default=None, metavar="PEM",
                   help="client certificate, for a switch with --grpc-server-with-client-auth")
    p.add_argument("--grpc-client-key", type=input_file, default=None, metavar="PEM", help="key of --grpc-client-cert")
    p.add_argument("--grpc-server-name", default=None, metavar="NAME",
                   help="name the switch's certificate is checked against (default: the host of --switch)")
    p.set_defaults(_many=many)


# -- innet testbed status / ls / down NAME ---------------------------------------------------


def _pid(pid: int | None) -> str:
    from innet.testbed.core.processes import pid_alive

    return "-" if pid is None else str(pid) if pid_alive(pid) else f"{pid} (exited)"


def status_lines(states: list[Any]) -> list[str]:
    """Plain lines (readable piped) describing each testbed and its switches; a switch
    process that died while its testbed runs is marked ``(exited)``."""
    lines = []
    for s in states:
        lines.append(f"{s.name}: {s.status}, {s.backend}, topology {s.topology}, owner pid {s.pid}, "
                     f"since {s.started}, K={s.k}, run dir {s.run_dir}")
        for sw in s.switches:
            ports = sw.udp_ports or sw.interfaces
            lines.append(f"  {sw.name} ({sw.impl}, device {sw.device_id}): P4Runtime {sw.p4runtime}, "
                         f"Thrift {sw.thrift or '-'}, pid {_pid(sw.pid)}, "
                         f"log {sw.log or '-'}")
            if ports:
                kind = "UDP" if sw.udp_ports else "interfaces"
                lines.append(f"    ports ({kind}): " + ", ".join(f"{p}={a}" for p, a in ports.items()))
        others = [p for p in s.processes if not p[0].startswith(("switch", "mnhost-"))]
        if others:
            lines.append("  processes: " + ", ".join(f"{n} pid {pid}" for n, pid, _ in others))
    return lines


def cmd_status(args: argparse.Namespace) -> int:
    from innet.testbed.core.state import clean_stale, describe, live_states, list_states, state_dir

    removed = clean_stale()
    states = live_states() if args.name is None else [s for s in list_states() if s.name == args.name]
    if args.name is not None and not states:
        names = ", ".join(s.name for s in live_states()) or "none"
        print(f"innet testbed status: no running testbed {args.name!r}; running: {names}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps([describe(s) for s in states], indent=1))
    else:
        for line in removed:
            print(line, file=sys.stderr)
        print("\n".join(status_lines(states)) if states else f"no testbed is running (state files in {state_dir()})")
    return 0


def down_testbed(name: str, timeout: float = 60.0) -> str:
    """Stop the running testbed ``name`` (SIGTERM to its owner, which tears it down); what was done."""
    from innet.polling import PollTimeout, poll_until
    from innet.testbed.core.state import find_testbed

    state = find_testbed(name)
    try:
        os.kill(state.pid, signal.SIGTERM)
    except PermissionError:
        raise PermissionError(f"testbed {name} belongs to another user (owner pid {state.pid}): "
                              "stop it as that user (or root)") from None
    except ProcessLookupError:
        return f"testbed {name}: its owner (pid {state.pid}) had already ended"
    try:
        poll_until(lambda: not state.live, timeout, interval=0.1, what=f"testbed {name} down")
    except PollTimeout:
        return f"testbed {name}: sent SIGTERM to pid {state.pid}, still running after {timeout:g} s"
    return f"stopped testbed {name} (owner pid {state.pid})"


def cmd_down_named(args: argparse.Namespace) -> int:
    """``innet testbed down NAME``: that testbed only."""
    from innet.testbed.core.state import TestbedStateError

    try:
        print(down_testbed(args.name))
    except (TestbedStateError, PermissionError) as error:
        print(f"innet testbed down: {error}", file=sys.stderr)
        return EXIT_ERROR
    return 0


def name_problem(name: str | None) -> str | None:
    """Why ``innet testbed up --name NAME`` cannot start (a bad or taken name), checked
    before any bring-up; None when it can."""
    from innet.testbed.core.state import TestbedStateError, check_name, live_states

    if name is None:
        return None
    try:
        check_name(name)
    except TestbedStateError as error:
        return str(error)
    for s in live_states():
        if s.name == name:
            return (f"testbed name {name!r} is taken by a running testbed (pid {s.pid}, {s.backend}, {s.topology}): "
                    f"choose another --name, or stop it with `innet testbed down {name}`")
    return None


def up_lines(tb: Any) -> list[str]:
    """What ``innet testbed up`` prints once up: name, moved ports, each switch's addresses,
    UDP ports (loopback) and the commands that reach it."""
    state = tb.state
    lines = [f"testbed {tb.name} is up: `innet testbed status {tb.name}` shows it, "
             f"`innet testbed down {tb.name}` stops it"]
    lines += tb.port_notes
    for sw in state.switches if state is not None else ():
        lines.append(f"  {sw.name}: P4Runtime {sw.p4runtime} (device {sw.device_id})"
                     + (f", Thrift {sw.thrift}" if sw.thrift else "") + f", log {sw.log}")
        if sw.udp_ports:
            lines.append("    UDP ports: " + ", ".join(f"{p}={a}" for p, a in sw.udp_ports.items()))
        lines.append(f"    inspect with: innet inspect --testbed {tb.name} --switch {sw.name}")
    return lines


def add_status_commands(tbsub: "argparse._SubParsersAction[Any]") -> None:
    """``testbed status`` and ``testbed ls`` on the ``innet testbed`` subparsers."""
    for name, text in (("status", "list running testbeds: switches, P4Runtime/Thrift addresses, ports, pids, logs"),
                       ("ls", "the same as status")):
        p = tbsub.add_parser(name, help=text)
        p.add_argument("name", nargs="?", default=None, help="only this testbed (default: every running one)")
        p.add_argument("--json", action="store_true", help="print JSON (the state files, with 'live')")
        p.set_defaults(func=cmd_status)


# -- innet table / counter / register ---------------------------------------------------------


def _session(func: Callable[[Any, argparse.Namespace], int], read_only: bool) -> Callable[[argparse.Namespace], int]:
    """A handler that opens one switch session for ``func`` and turns errors into one line."""

    def run(args: argparse.Namespace) -> int:
        from innet.controller.errors import ControllerError
        from innet.controller.switch import Switch

        try:
            (spec,) = endpoints(args, read_only)
            with Switch(spec) as sw:
                return func(sw, args)
        except (ControllerError, OSError) as error:
            print(f"innet {args.command}: error: {error}", file=sys.stderr)
            return EXIT_ERROR

    return run


def _split_params(words: list[str]) -> tuple[list[str], list[str]]:
    if "=>" in words:
        i = words.index("=>")
        return words[:i], words[i + 1:]
    return words, []


def _table_write(sw: Any, args: argparse.Namespace) -> int:
    from innet.controller.entity_text import format_entry, parse_entry

    if args.action == "delete":
        entry = parse_entry(sw.schema, args.table, args.key, priority=args.priority)
        sw.delete([entry])
    elif args.action == "set-default":
        key, params = _split_params(args.key)
        entry = replace(parse_entry(sw.schema, args.table, [], args.entry_action, key + params), is_default=True)
        sw.modify([entry])
    else:
        key, params = _split_params(args.key)
        entry = parse_entry(sw.schema, args.table, key, args.entry_action, params, args.priority)
        (sw.insert if args.action == "add" else sw.modify)([entry])
    verb = {"add": "added", "modify": "modified", "delete": "deleted", "set-default": "set default"}[args.action]
    print(f"{verb} on {_label(sw, args)}: {format_entry(entry, sw.schema, args.action != 'delete')}")
    return 0


def _label(sw: Any, args: argparse.Namespace) -> str:
    """The switch as the user named it: ``s1 of testbed tb1``, or its address."""
    named = args.testbed is not None or (args.switch and not _is_address(args.switch[0]))
    return f"{sw.spec.name} ({sw.spec.address})" if named else sw.spec.address


def _table_dump(sw: Any, args: argparse.Namespace) -> int:
    from innet.controller.entity_text import format_entry
    from innet.controller.errors import ControllerError

    tables = [sw.schema.table(args.table).name] if args.table else sorted(sw.schema.tables.names())
    out: dict[str, dict[str, Any]] = {}
    for name in tables:
        entries = [format_entry(e, sw.schema) for e in sw.read_table(name)]
        try:
            default: str | None = format_entry(sw.read_default(name), sw.schema)
        except ControllerError:  # a switch that does not read default entries: the entries alone
            default = None
        out[name] = {"entries": entries, "default": default}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    for name, doc in out.items():
        n = len(doc["entries"])
        print(f"{name}: {n} entr{'y' if n == 1 else 'ies'}")
        for line in doc["entries"] + ([doc["default"]] if doc["default"] else []):
            print(f"  {line}")
    return 0


def _counter_cmd(sw: Any, args: argparse.Namespace) -> int:
    names = [sw.schema.counter(args.name).name] if args.name else sorted(sw.schema.counters.names())
    if args.action == "reset":
        cells = [(n, i) for n in names for i in ([args.index] if args.index is not None
                                                  else range(sw.schema.counter(n).size))]
        sw.reset_counters(cells)
        print(f"reset {len(cells)} cell(s) of {', '.join(names)} on {_label(sw, args)}")
        return 0
    out: dict[str, dict[str, dict[str, int]]] = {n: {str(i): {"packets": p, "bytes": b} for i, (p, b) in sorted(sw.read_counter(n, args.index).items())}
           for n in names}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    for name, read in out.items():
        nonzero = {i: c for i, c in read.items() if c["packets"] or c["bytes"] or args.index is not None}
        print(f"{name}: {len(read)} cells" + ("" if args.index is not None else f", {len(nonzero)} non-zero"))
        for i, c in nonzero.items():
            print(f"  [{i}] packets={c['packets']} bytes={c['bytes']}")
    return 0


def _parse_range(text: str | None, size: int, what: str) -> range:
    from innet.controller.errors import ValueRangeError

    if text is None:
        return range(size)
    start, sep, stop = text.partition(":")
    try:
        r = range(int(start, 0), int(stop, 0) if sep else int(start, 0) + 1)
    except ValueError:
        raise ValueRangeError(f"{what}: index range {text!r}: expected I or A:B (B excluded)") from None
    if len(r) == 0 or r.start < 0 or r.stop > size:
        raise ValueRangeError(f"{what}: index range {text!r} is empty or outside 0..{size - 1}")
    return r


def _register_cmd(sw: Any, args: argparse.Namespace) -> int:
    from innet.controller.schema import parse_value

    if args.action == "write":
        info = sw.schema.register(args.name)
        values = [parse_value(v, f"register {info.name!r} value") for v in args.values]
        sw.write_register(info.name, args.index, values)
        print(f"wrote {len(values)} cell(s) of {info.name} from index {args.index} on {_label(sw, args)}")
        return 0
    if args.name is None:
        for name in sorted(sw.schema.registers.names()):
            info = sw.schema.register(name)
            print(f"{info.name}: {info.size} cells of bit<{info.bitwidth}>")
        return 0
    info = sw.schema.register(args.name)
    indexes = _parse_range(args.range, info.size, f"register {info.name!r}")
    values = sw.read_register(info.name, indexes)
    if args.json:
        print(json.dumps({"name": info.name, "start": indexes.start, "values": values}))
    else:
        print(f"{info.name}[{indexes.start}:{indexes.stop}] = " + " ".join(str(v) for v in values))
    return 0


def add_commands(sub: "argparse._SubParsersAction[Any]") -> None:
    """Register ``table``, ``counter`` and ``register`` on the ``innet`` parser."""
    table = sub.add_parser("table", help="add, modify, delete or dump entries of any table "
                                         "(simple_switch_CLI's table_add/table_dump)")
    tsub = table.add_subparsers(dest="action", required=True)
    key_help = ("key words in the table's key order (V exact, V/LEN lpm, V&&&MASK ternary, LOW->HIGH range, "
                "or FIELD=...; left out: wildcard), then => and the action's parameters (V or NAME=V)")
    for action, text in (("add", "insert an entry: TABLE ACTION KEY... => PARAM..."),
                         ("modify", "change the action of an entry: TABLE ACTION KEY... => PARAM...")):
        p = tsub.add_parser(action, help=text)
        p.add_argument("table", help="table name (full, or its last part)")
        p.add_argument("entry_action", metavar="action", help="action name")
        p.add_argument("key", nargs="*", help=key_help)
        p.add_argument("--priority", type=int_range(0, 2**31 - 1), default=0,
                       help="entry priority (needed by ternary, range and optional keys; default 0)")
        add_target_args(p)
        p.set_defaults(func=_session(_table_write, read_only=False))
    p = tsub.add_parser("delete", help="delete an entry: TABLE KEY...")
    p.add_argument("table", help="table name")
    p.add_argument("key", nargs="*", help="the entry's key words (as for add)")
    p.add_argument("--priority", type=int_range(0, 2**31 - 1), default=0, help="the entry's priority (default 0)")
    add_target_args(p)
    p.set_defaults(func=_session(_table_write, read_only=False))
    p = tsub.add_parser("set-default", help="set a table's default action: TABLE ACTION [PARAM...]")
    p.add_argument("table", help="table name")
    p.add_argument("entry_action", metavar="action", help="action name")
    p.add_argument("key", nargs="*", metavar="param", help="the action's parameters (V or NAME=V)")
    add_target_args(p)
    p.set_defaults(func=_session(_table_write, read_only=False), priority=0)
    p = tsub.add_parser("dump", help="print the entries (and default action) of a table, or of every table")
    p.add_argument("table", nargs="?", default=None, help="table name (default: every table)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_target_args(p)
    p.set_defaults(func=_session(_table_dump, read_only=True))

    counter = sub.add_parser("counter", help="read or reset counters of any program (simple_switch_CLI's counter_read)")
    csub = counter.add_subparsers(dest="action", required=True)
    for action, text in (("read", "print a counter's cells (every counter without NAME; zero cells left out)"),
                         ("reset", "zero a counter's cells (every counter without NAME)")):
        p = csub.add_parser(action, help=text)
        p.add_argument("name", nargs="?", default=None, help="counter name (default: every counter)")
        p.add_argument("--index", type=int_range(0), default=None, help="only this cell (default: all)")
        if action == "read":
            p.add_argument("--json", action="store_true", help="print JSON")
        add_target_args(p)
        p.set_defaults(func=_session(_counter_cmd, read_only=action == "read"))

    register = sub.add_parser("register", help="read or write registers of any program "
                                               "(simple_switch_CLI's register_read/register_write)")
    rsub = register.add_subparsers(dest="action", required=True)
    p = rsub.add_parser("read", help="print a register's cells (without NAME: every register and its size)")
    p.add_argument("name", nargs="?", default=None, help="register name (default: list the registers)")
    p.add_argument("--range", default=None, metavar="I|A:B", help="one cell or cells A..B-1 (default all)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_target_args(p)
    p.set_defaults(func=_session(_register_cmd, read_only=True))
    p = rsub.add_parser("write", help="write cells INDEX, INDEX+1, ... of a register")
    p.add_argument("name", help="register name")
    p.add_argument("index", type=int_range(0), help="first cell")
    p.add_argument("values", nargs="+", help="values (decimal, 0x hex, negative: two's complement)")
    add_target_args(p)
    p.set_defaults(func=_session(_register_cmd, read_only=False))


__all__ = ["SwitchTarget", "add_commands", "add_status_commands", "add_target_args", "down_testbed", "endpoints",
           "resolve", "up_lines"]
