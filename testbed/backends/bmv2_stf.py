"""Run an STF test on real BMv2 (``simple_switch``) and compare its outputs with the file's.

The differential reference for innet's embedded target: the program is compiled with
``p4c-bm2-ss``; ``simple_switch`` runs it with pcap-file ports (``--use-files 0``, port N
reading FIFO ``pcapN_in.pcap`` and writing ``pcapN_out.pcap``, one per port some
``packet``/``expect`` line names, as p4c's BMv2 STF driver sets it up); the control-plane
lines go through one ``simple_switch_CLI`` session, which ends before the first packet
(innet's runner, too, applies every control line first); the packets then go in back to back
in file order (increasing pcap time stamps, by which the switch merges its ports). Once the switch's log has been quiet for a while the switch is stopped and
each port's output compared, in order, with the ``expect`` lines of that port (``*``
nibbles, ``$`` exact length: the driver's ``compare_pkt``); a port that expects nothing must
send nothing. ``check_counter`` lines, which the driver parses but never checks, are checked
here with the CLI's ``counter_read`` after the packets.

What is not BMv2's to judge: a ``NAME.innet.stf`` file (innet's dialect, first line says why)
is :class:`Bmv2Skip`; a line BMv2 cannot express is ``Bmv2Unsupported`` naming file:line.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from innet.switch.stf import StfTest, expect_matches, read_stf
from innet.switch.stf_dialect import INNET_SUFFIX, program_for
from innet.children import end_popen
from innet.testbed.backends.bmv2 import Bmv2Error, Bmv2Missing, compile_program, find_tools
from innet.testbed.backends.bmv2_stf_cli import Bmv2Unsupported, CliCommand, cli_commands, counter_name
from innet.testbed.core.freeport import free_port

__all__ = ["Bmv2Skip", "Bmv2StfResult", "Bmv2StfTools", "find_stf_tools", "innet_only_reason", "run_bmv2_stf"]

_PCAP_MAGIC = 0xA1B2C3D4
_PCAP_MAGIC_NS = 0xA1B23C4D
_QUIET_S = 1.0
"""How long the switch log must stay unchanged before its outputs are read, while it has
not yet logged the arrival of every packet sent (a packet the switch never reports)."""
_SETTLED_S = 0.25
"""The same once every packet sent has been logged as received: what is left is the rest of
its pipeline, which BMv2 logs within milliseconds."""
_RECEIVED = b"Processing packet received on port"


class Bmv2Skip(Exception):
    """An STF file BMv2 cannot run at all (innet's dialect); the message says why."""


@dataclass(frozen=True)
class Bmv2StfTools:
    """The binaries the STF tier runs."""

    switch: Path
    """``simple_switch`` (pcap-file ports need no PI)."""
    cli: Path
    p4c: Path


@dataclass(frozen=True)
class Bmv2StfResult:
    agreed: bool
    message: str
    packets: int


def find_stf_tools(env: Mapping[str, str] | None = None) -> Bmv2StfTools:
    """``simple_switch`` beside the ``simple_switch_grpc`` the bmv2 backend finds, its CLI and
    ``p4c-bm2-ss``; Bmv2Missing names the first one missing."""
    tools = find_tools(env, need_p4c=True, need_cli=True)
    switch = tools.switch.with_name("simple_switch")
    if not (switch.is_file() and os.access(switch, os.X_OK)):
        raise Bmv2Missing(f"bmv2 STF tier: simple_switch not found beside {tools.switch}")
    assert tools.cli is not None and tools.p4c is not None
    return Bmv2StfTools(switch, tools.cli, tools.p4c)


def innet_only_reason(stf: Path) -> str | None:
    """Why BMv2 cannot run ``stf`` (its first line), or None for a file in p4c's dialect."""
    if not stf.name.endswith(INNET_SUFFIX):
        return None
    first = stf.read_text(errors="replace").split("\n", 1)[0].lstrip("# ").strip()
    return f"{stf.name}:1: {first}"


def _pcap_header() -> bytes:
    return _PCAP_MAGIC.to_bytes(4, "little") + bytes.fromhex("02000400") + bytes(8) + \
        (65535).to_bytes(4, "little") + (1).to_bytes(4, "little")


def _pcap_record(data: bytes, seq: int) -> bytes:
    """One record stamped ``seq`` µs: simple_switch's pcap reader merges its ports' files by
    time stamp, so increasing stamps keep the file's order across ports (a stateful program
    depends on it)."""
    n = len(data).to_bytes(4, "little")
    return (seq // 1_000_000).to_bytes(4, "little") + (seq % 1_000_000).to_bytes(4, "little") + n + n + data


def read_pcap(path: Path) -> list[bytes]:
    """The packets of a classic pcap file (either byte order, µs or ns stamps); [] if empty."""
    raw = path.read_bytes() if path.is_file() else b""
    if len(raw) < 24:
        return []
    order = "little" if int.from_bytes(raw[:4], "little") in (_PCAP_MAGIC, _PCAP_MAGIC_NS) else "big"
    out, pos = [], 24
    while pos + 16 <= len(raw):
        n = int.from_bytes(raw[pos + 8:pos + 12], order)  # type: ignore[arg-type]
        out.append(raw[pos + 16:pos + 16 + n])
        pos += 16 + n
    return out


def _wait_thrift(proc: subprocess.Popen[bytes], port: int, deadline: float, log: Path) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Bmv2Error(f"simple_switch exited with status {proc.returncode} before its Thrift server "
                            f"came up: {_tail(log)}")
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise Bmv2Error(f"simple_switch's Thrift server on port {port} did not come up in time")


def _tail(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines() if path.is_file() else []
    return lines[-1] if lines else "no output"


_CLI_ERROR = re.compile(r"^(Error|Invalid|\*\*\*|Traceback|.*Exception)", re.MULTILINE)


def _run_cli(cli: Path, thrift: int, commands: list[str], cwd: Path) -> list[str]:
    """Run ``commands`` in one CLI session; each command's output, in order."""
    text = "".join(c + "\n" for c in commands)
    try:
        done = subprocess.run([str(cli), "--thrift-port", str(thrift)], input=text, capture_output=True, text=True,
                              timeout=60 + 2 * len(commands), cwd=cwd)
    except subprocess.TimeoutExpired:
        raise Bmv2Error(f"simple_switch_CLI did not finish {len(commands)} command(s) in time") from None
    if done.returncode != 0:
        raise Bmv2Error(f"simple_switch_CLI failed (status {done.returncode}): {done.stderr.strip()[-300:]}")
    parts = done.stdout.split("RuntimeCmd: ")
    return parts[1:len(commands) + 1] + [""] * max(0, len(commands) + 1 - len(parts))


def _check_cli(commands: list[CliCommand], outputs: list[str], where: str) -> None:
    for cmd, out in zip(commands, outputs):
        m = _CLI_ERROR.search(out)
        if m is not None:
            line = out[m.start():].splitlines()[0]
            raise Bmv2Error(f"{where}:{cmd.line}: simple_switch_CLI refused {cmd.text!r}: {line}")


def _wait_quiet(proc: subprocess.Popen[bytes], log: Path, deadline: float, sent: int = 0) -> None:
    """Until the switch log has not grown for ``_SETTLED_S`` after it logged ``sent`` packets
    as received, or for ``_QUIET_S`` before (the packets are through)."""
    size, since, received = -1, time.monotonic(), 0
    while time.monotonic() < deadline and proc.poll() is None:
        now_size = log.stat().st_size if log.is_file() else 0
        if now_size != size:
            if received < sent:
                with open(log, "rb") as f:
                    received = f.read().count(_RECEIVED)
            size, since = now_size, time.monotonic()
        elif time.monotonic() - since >= (_SETTLED_S if received >= sent else _QUIET_S):
            return
        time.sleep(0.05)


def _compare(test: StfTest, got: dict[int, list[bytes]], where: str) -> list[str]:
    problems = []
    for port in sorted(got):
        exp = [e for e in test.expects if e.port == port]
        outs = got[port]
        for i in range(max(len(exp), len(outs))):
            e = exp[i] if i < len(exp) else None
            d = outs[i] if i < len(outs) else None
            if e is not None and d is not None and expect_matches(e, d):
                continue
            line = f"{where}:{e.line}" if e is not None else where
            want = "nothing" if e is None else (e.pattern or "<any>") + ("$" if e.exact else "")
            problems.append(f"{line}: port {port} packet #{i}: expected {want}, BMv2 sent "
                            f"{'nothing' if d is None else d.hex()}")
    return problems


def _counter_checks(test: StfTest, program: Mapping[str, Any], where: str) -> list[tuple[int, str, str, str, int]]:
    """(line, CLI counter, what, op, value) for each ``check_counter`` with a comparison."""
    out = []
    for line, cmd, args in test.checks:
        if cmd != "check_counter":
            raise Bmv2Unsupported(f"{where}:{line}: unsupported on BMv2: {cmd} with an expected value is innet's")
        m = re.fullmatch(r"(\w+)\((\w+)\)", args[0]) if args else None
        if m is None:
            raise Bmv2Unsupported(f"{where}:{line}: unsupported on BMv2: check_counter {' '.join(args)!r}")
        name = counter_name(program, m.group(1))
        if name is None:
            raise Bmv2Unsupported(f"{where}:{line}: unsupported on BMv2: {m.group(1)!r} is not one indexed "
                                  "counter in p4c's BMv2 JSON (direct counters have no index)")
        rest = args[1:]
        what = rest.pop(0) if rest and rest[0] in ("packets", "bytes") else "packets"
        if len(rest) == 2:
            out.append((line, f"{name} {int(m.group(2), 0)}", what, rest[0], int(rest[1], 0)))
    return out


_OPS = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__, ">": int.__gt__, ">=": int.__ge__}


def run_bmv2_stf(stf: Path, tools: Bmv2StfTools, work: Path, p4: Path | None = None,
                 timeout: float = 120.0) -> Bmv2StfResult:
    """Compile ``p4`` (default: the program ``stf`` tests), run ``stf`` on simple_switch in
    ``work`` and compare. Raises Bmv2Skip (innet's dialect), Bmv2Unsupported (a line BMv2
    cannot express), Bmv2Error (p4c, the switch or the CLI failed; names which)."""
    reason = innet_only_reason(stf)
    if reason is not None:
        raise Bmv2Skip(reason)
    p4 = p4 or program_for(stf)
    test = read_stf(stf)
    where = str(stf)
    if test.no_packet_ports:
        raise Bmv2Unsupported(f"{where}: unsupported on BMv2: no_packet (p4c's driver cannot run it)")
    out_dir = compile_program(tools.p4c, p4, work / "build")
    json_path = out_dir / f"{p4.stem}.json"
    program = json.loads(json_path.read_text())
    commands = cli_commands(test, program, where)
    counters = _counter_checks(test, program, where)
    ports = sorted({p for _, p, _ in test.packets} | {e.port for e in test.expects})
    run = work / "run"
    run.mkdir(parents=True, exist_ok=True)
    fifos: dict[int, int] = {}
    for port in ports:
        path = run / f"pcap{port}_in.pcap"
        path.unlink(missing_ok=True)
        (run / f"pcap{port}_out.pcap").unlink(missing_ok=True)
        os.mkfifo(path)
        fifos[port] = os.open(path, os.O_RDWR)  # never blocks; the switch sees EOF once it is closed
        os.write(fifos[port], _pcap_header())
    thrift = free_port()
    log = run / "switch.txt"
    # debug, not trace: per-packet events (parser, tables, transmit) without one line per
    # primitive, which makes the log, not the switch, the bottleneck on large programs
    argv = [str(tools.switch), "--log-file", str(run / "switch"), "--log-flush", "--log-level", "debug",
            "--use-files", "0",
            "--thrift-port", str(thrift), "--notifications-addr", f"ipc://{run / 'notifications.ipc'}"]
    for port in ports:
        argv += ["-i", f"{port}@pcap{port}"]
    argv.append(str(json_path))
    deadline = time.monotonic() + timeout
    with open(run / "stdout.txt", "wb") as out:
        proc = subprocess.Popen(argv, cwd=run, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    counts: list[str] = []
    try:
        _wait_thrift(proc, thrift, deadline, run / "stdout.txt")
        if commands:
            _check_cli(commands, _run_cli(tools.cli, thrift, [c.text for c in commands], run), where)
        for seq, (_, port, data) in enumerate(test.packets, 1):
            os.write(fifos[port], _pcap_record(data, seq))
        for fd in fifos.values():
            os.close(fd)
        fifos.clear()
        _wait_quiet(proc, log, deadline, sent=len(test.packets))
        if counters:
            counts = _run_cli(tools.cli, thrift, [f"counter_read {c[1]}" for c in counters], run)
    finally:
        for fd in fifos.values():
            os.close(fd)
        end_popen(proc)
    if proc.returncode not in (0, -signal.SIGTERM):
        raise Bmv2Error(f"{where}: simple_switch died with status {proc.returncode} on p4c's output for "
                        f"{p4.name}: {_tail(run / 'stdout.txt')}")
    got = {port: read_pcap(run / f"pcap{port}_out.pcap") for port in ports}
    problems = _compare(test, got, where)
    for (line, counter, what, op, want), text in zip(counters, counts):
        m = re.search(rf"(\d+) {what}\b", text)  # "NAME[i]= (1020 bytes, 14 packets)"
        if m is None:
            problems.append(f"{where}:{line}: counter_read {counter}: no {what} in {text.strip()!r}")
        elif not _OPS[op](int(m.group(1)), want):
            problems.append(f"{where}:{line}: counter {counter} {what} = {m.group(1)} on BMv2, expected {op} {want}")
    if problems:
        return Bmv2StfResult(False, "BMv2 disagrees:\n" + "\n".join(problems), len(test.packets))
    return Bmv2StfResult(True, f"{where}: {len(test.packets)} packet(s), BMv2 agrees", len(test.packets))
