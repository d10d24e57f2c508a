"""``innet-switch``: the embedded target as a process, flags shaped like simple_switch_grpc.

    innet-switch [--device-id N] [-i PORT@IFACE]... [-u PORT@HOST:UDPPORT[@PEER:PORT]]...
                 [--cpu-port N] [--grpc-server-addr HOST:PORT] [--pcap DIR]
                 [--log-level LEVEL] [--loss DROP,DUP,REORDER,SEED] (PROGRAM | --no-p4)
                 [--grpc-server-ssl --grpc-server-cert PEM --grpc-server-key PEM
                  [--grpc-server-cacert PEM [--grpc-server-with-client-auth]]]

PROGRAM is a device config written by ``innet-p4c`` or a P4 source file. On start the
actual gRPC address is printed as ``innet-switch: P4Runtime listening on HOST:PORT``.
Bad flags, missing interfaces and busy addresses are reported in one line with exit
status 2; SIGINT/SIGTERM stop the switch cleanly (exit status 0).
"""

from __future__ import annotations

import argparse
import logging
import re
import signal
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from innet.argtypes import (EXIT_USAGE, UINT64_MAX, CommandParser, UsageError, add_executor, host_port, input_file,
                            int_range, output_dir, run_command)
from innet.switch.p4runtime.target_api import Target
from innet.switch.ports import IfacePortSpec, LossSpec, PortError, UdpPortSpec
from innet.switch.server import DEFAULT_GRPC_ADDRESS, SwitchError, SwitchOptions, SwitchServer
from innet.switch.tls import ServerTls, TlsConfigError

PROG = "innet-switch"


class _Parser(CommandParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{PROG}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="innet's embedded P4 switch with a P4Runtime server.")
    parser.add_argument("program", nargs="?", type=input_file,
                        help="device config (innet-p4c output) or P4 source to load at start")
    parser.add_argument("--no-p4", action="store_true",
                        help="start without a program; wait for SetForwardingPipelineConfig")
    parser.add_argument("--device-id", type=int_range(0, UINT64_MAX), default=1, metavar="N",
                        help="P4Runtime device id (default 1)")
    parser.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                        help="attach switch port PORT to Linux interface IFACE (repeatable)")
    parser.add_argument("-u", "--udp-port", action="append", default=[],
                        metavar="PORT@HOST:UDPPORT[@PEER:PORT]",
                        help="switch port PORT as a UDP socket bound to HOST:UDPPORT; output goes "
                             "to PEER:PORT if given, else to the last sender (repeatable)")
    parser.add_argument("--cpu-port", type=int, default=None, metavar="N",
                        help="port whose packets become PacketIn; PacketOut enters here")
    parser.add_argument("--grpc-server-addr", type=host_port, default=DEFAULT_GRPC_ADDRESS, metavar="HOST:PORT",
                        help=f"P4Runtime address (default {DEFAULT_GRPC_ADDRESS}; port 0: any free)")
    parser.add_argument("--pcap", type=output_dir, default=None, metavar="DIR",
                        help="write port<N>_in.pcap / port<N>_out.pcap captures into DIR")
    add_executor(parser, what="packet executor")
    parser.add_argument("--port-loop", choices=("auto", "native", "python"), default="auto",
                        help="who serves the ports: native (a C loop with batched recvmmsg/sendmmsg, packets "
                             "run in C), python (one Python call per frame), or auto (native unless the "
                             "executor is python, or --pcap/--loss is given; default)")
    parser.add_argument("--log-level", default="info",
                        choices=["trace", "debug", "info", "warn", "warning", "error", "critical", "off"],
                        help="log level (debug names ports, tables and actions per packet)")
    parser.add_argument("--port-delay", action="append", default=[], metavar="PORT=MS",
                        help="send PORT's output MS milliseconds late (WAN delay without netem; repeatable)")
    parser.add_argument("--loss", default=None, metavar="DROP,DUP,REORDER[,SEED]",
                        help="impair UDP port output with these probabilities (tests)")
    tls = parser.add_argument_group("TLS (the flags of simple_switch_grpc)")
    tls.add_argument("--grpc-server-ssl", action="store_true",
                     help="serve P4Runtime over TLS (needs --grpc-server-cert and --grpc-server-key)")
    tls.add_argument("--grpc-server-cacert", type=Path, default=None, metavar="PEM",
                     help="CA certificate to verify client certificates against")
    tls.add_argument("--grpc-server-cert", type=Path, default=None, metavar="PEM",
                     help="server certificate")
    tls.add_argument("--grpc-server-key", type=Path, default=None, metavar="PEM", help="server private key")
    tls.add_argument("--grpc-server-with-client-auth", action="store_true",
                     help="require clients to present a certificate signed by --grpc-server-cacert")
    return parser


def _tls(args: argparse.Namespace) -> ServerTls | None:
    given = [flag for flag, value in (("--grpc-server-cacert", args.grpc_server_cacert),
                                      ("--grpc-server-cert", args.grpc_server_cert),
                                      ("--grpc-server-key", args.grpc_server_key),
                                      ("--grpc-server-with-client-auth", args.grpc_server_with_client_auth))
             if value]
    if not args.grpc_server_ssl:
        if given:
            raise UsageError(f"{given[0]} needs --grpc-server-ssl")
        return None
    if args.grpc_server_cert is None or args.grpc_server_key is None:
        raise UsageError("--grpc-server-ssl needs --grpc-server-cert and --grpc-server-key")
    for flag, path in (("--grpc-server-cert", args.grpc_server_cert), ("--grpc-server-key", args.grpc_server_key),
                       ("--grpc-server-cacert", args.grpc_server_cacert)):
        if path is not None and not path.is_file():
            raise UsageError(f"{flag} {str(path)!r}: no such file")
    try:
        return ServerTls(args.grpc_server_cert, args.grpc_server_key, args.grpc_server_cacert,
                         args.grpc_server_with_client_auth)
    except TlsConfigError as error:
        raise UsageError(str(error)) from None


def _loss(text: str | None) -> LossSpec | None:
    if text is None:
        return None
    parts = text.split(",")
    try:
        if len(parts) not in (3, 4):
            raise ValueError
        drop, dup, reorder = (float(p) for p in parts[:3])
        seed = int(parts[3]) if len(parts) == 4 else 0
    except ValueError:
        raise UsageError(f"--loss {text!r}: expected DROP,DUP,REORDER[,SEED] "
                         "(probabilities 0..1, integer seed)") from None
    for name, p in (("drop", drop), ("duplicate", dup), ("reorder", reorder)):
        if not 0.0 <= p <= 1.0:
            raise UsageError(f"--loss: {name} probability {p} is outside 0..1")
    return LossSpec(drop, dup, reorder, seed)


def _port_delay(text: str) -> tuple[int, float]:
    port, sep, ms = text.partition("=")
    try:
        if not sep:
            raise ValueError
        number, delay = int(port), float(ms)
    except ValueError:
        raise UsageError(f"--port-delay {text!r}: expected PORT=MS, e.g. 101=40") from None
    if not 0 <= number < 511 or not 0 <= delay <= 10_000:
        raise UsageError(f"--port-delay {text!r}: port must be in 0..510 and MS in 0..10000")
    return number, delay


P4INFO_SUFFIXES = (".txtpb", ".txt", ".bin", ".pb")


def _check_program(path: Path) -> None:
    """UsageError when PROGRAM is a P4Info file (innet-p4c writes one beside the device config)."""
    try:
        head = path.read_bytes()[:200]
    except OSError:
        return  # the server names the read error
    if path.suffix in P4INFO_SUFFIXES or path.name.startswith("p4info") or b"p4info.proto" in head:
        configs = sorted(str(p) for p in path.parent.glob("*.innet.json"))
        raise UsageError(f"program {str(path)!r} is a P4Info file, not a program: give the device config "
                         + (f"beside it ({', '.join(configs)})" if configs else "innet-p4c writes (NAME.innet.json)")
                         + " or a P4 source file")


def _named(message: str, program: Path | None) -> str:
    """``message`` with the compiler's temporary copy of PROGRAM named as the user gave it
    (the same text, so its line and column numbers hold)."""
    if program is None:
        return message
    return re.sub(r"\S*/innet-switch-[^/\s]+/program\.p4", lambda _: str(program), message)


def options_from_args(args: argparse.Namespace) -> SwitchOptions:
    """SwitchOptions from parsed flags; raises UsageError or PortError."""
    if args.program is not None and args.no_p4:
        raise UsageError("give either a program or --no-p4, not both")
    if args.program is None and not args.no_p4:
        raise UsageError("no program given; pass a device config/P4 file or --no-p4")
    if args.program is not None:
        _check_program(args.program)
    if args.cpu_port is not None and not 0 <= args.cpu_port < 512:
        raise UsageError(f"--cpu-port {args.cpu_port}: must be in 0..511")
    return SwitchOptions(
        device_id=args.device_id,
        udp_ports=tuple(UdpPortSpec.parse(u) for u in args.udp_port),
        iface_ports=tuple(IfacePortSpec.parse(i) for i in args.interface),
        cpu_port=args.cpu_port,
        grpc_address=args.grpc_server_addr,
        pcap_dir=args.pcap,
        program=args.program,
        loss=_loss(args.loss),
        tls=_tls(args),
        port_delays=tuple(_port_delay(d) for d in args.port_delay),
        port_loop=args.port_loop,
    )


def _configure_logging(level: str) -> None:
    names = {"trace": logging.DEBUG, "warn": logging.WARNING, "off": logging.CRITICAL + 10}
    logging.basicConfig(level=names.get(level, getattr(logging, level.upper(), logging.INFO)),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def default_target(executor: str = "auto") -> Target:
    """innet's executor behind the target protocol."""
    from innet.switch.p4runtime.embedded_target import InnetTarget

    return InnetTarget(executor=executor)


def main(argv: Sequence[str] | None = None, target: Target | None = None) -> int:
    """Run the switch until SIGINT/SIGTERM; the exit status."""
    args = build_parser().parse_args(argv)
    return run_command(PROG, lambda: _serve(args, target))


def _serve(args: argparse.Namespace, target: Target | None) -> int:
    try:
        options = options_from_args(args)
    except (UsageError, PortError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    _configure_logging(args.log_level)
    switch = SwitchServer(options, target if target is not None else default_target(args.executor))
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: switch.stop())
    try:
        switch.start()
    except (SwitchError, PortError) as error:
        print(f"{PROG}: error: {_named(str(error), options.program)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        print(f"{PROG}: P4Runtime listening on {switch.grpc_address}", flush=True)
        for port in (switch.ports.ports.values() if switch.ports else []):
            address = getattr(port, "address", None)
            if address is not None:
                print(f"{PROG}: port {port.number} on UDP {address[0]}:{address[1]}", flush=True)
        while not switch.wait(0.5):
            pass
    finally:
        switch.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
