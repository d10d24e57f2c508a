"""Benchmark of the switch process: P4Runtime Write throughput and packet rate on veths.

Run as ``innet bench p4runtime [--out results/] [--skip-packets]``.

1. **Writes**: an ``innet-switch --no-p4`` process on loopback gets
   ``p4/examples/basic_forward.p4`` (compiled in-process, as ``innet-p4c`` does) over
   SetForwardingPipelineConfig; a client then INSERTs and DELETEs 1000 distinct /32
   routes of ``MyIngress.ipv4_lpm`` (size 1024) in batches of 1 and of 1000, for
   ``--write-rounds`` rounds (bounded by ``--max-seconds`` per batch size).
2. **Packets** (root only): namespaces ``innetb-a``/``innetb-b``, each with a veth whose
   peer is a switch port in the root namespace (``-i 1@innetb-s1 -i 2@innetb-s2``). A
   sender in ``innetb-a`` writes pre-built Ethernet/IPv4/UDP frames to a raw AF_PACKET
   socket (unpaced, and paced at ``--rates``); a receiver in ``innetb-b`` counts the
   frames the switch forwarded (MAC rewritten by ``ipv4_forward``). Each run is bounded
   by ``--frames`` and ``--seconds``; the switch's CPU time is read from /proc, so
   "packets per switch CPU-second" stays meaningful on a machine shared with other work
   (where "switch CPU" well below 100% at loss means the switch was starved, not saturated).

Prints rich tables and saves ``bench_p4runtime.json`` naming the machine and settings.
Namespaces, veths and processes are removed in ``finally`` blocks, the switch gets
SIGTERM if the benchmark itself is killed, and leftover namespaces/veths of a crashed run
are removed before a new one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import select
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import psutil

from innet.children import die_with_parent, end_popen
from innet.argtypes import Reporter, add_out, console, int_range, interrupted_partial, positive_float
from innet.testbed.core.paths import REPO
from innet.testbed.core.processes import cpu_seconds
from innet.testbed.core.machine import Machine
from innet.testbed.core.machine import describe as machine
from innet.testbed.core.veth import VethPair
from innet.testbed.microbench.records import PacketRow, WriteRow

if TYPE_CHECKING:
    from finsy.proto import p4r

    from innet.controller.schema import P4Schema

PROGRAM = REPO / "p4" / "examples" / "basic_forward.p4"
TABLE, ACTION = "MyIngress.ipv4_lpm", "MyIngress.ipv4_forward"
READY = "innet-switch: P4Runtime listening on "
NS_A, NS_B = "innetb-a", "innetb-b"
IF_A, IF_S1, IF_B, IF_S2 = "innetb-a0", "innetb-s1", "innetb-b0", "innetb-s2"
OUT_MAC = 0x000000000202

# -- the switch process -----------------------------------------------------------------


@contextlib.contextmanager
def switch_process(*args: str, cpus: set[int] | None = None,
                   timeout: float = 60.0) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``innet-switch ARGS`` with gRPC on a free loopback port: (process, address).

    ``cpus`` pins the process (None: no pinning)."""
    cmd = [sys.executable, "-m", "innet.switch.cli.switch", *args,
           "--grpc-server-addr", "127.0.0.1:0", "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=die_with_parent)
    if cpus:
        os.sched_setaffinity(proc.pid, cpus)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout
        address = None
        while address is None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                raise RuntimeError(f"innet-switch did not report its address within {timeout} s")
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"innet-switch exited ({proc.wait()}): {proc.stderr.read()}")  # type: ignore[union-attr]
            if line.startswith(READY):
                address = line[len(READY):].strip()
        yield proc, address
    finally:
        end_popen(proc)


def compile_program() -> tuple[Any, bytes]:
    """(P4Info, device config bytes) of basic_forward.p4."""
    from innet.switch.device_config import build

    result = build(PROGRAM)
    return result.p4info, result.config.to_bytes()


def route(schema: P4Schema, dst: int, prefix_len: int) -> p4r.Update:
    """The INSERT of an ``ipv4_lpm`` route to ``dst/prefix_len`` out of port 2."""
    from innet.controller.entities import Lpm, TableEntry, insert

    return insert(schema, TableEntry(TABLE, {"hdr.ipv4.dstAddr": Lpm(dst, prefix_len)}, ACTION,
                                     {"dstAddr": OUT_MAC, "port": 2}))


# -- 1. P4Runtime writes -----------------------------------------------------------------


def bench_writes(rounds: int, max_seconds: float, entries: int = 1000, rows: list[WriteRow] | None = None,
                 progress: Callable[[str], None] = lambda _: None) -> list[WriteRow]:
    """Insert+delete rounds per batch size; each batch size's rows appended to ``rows`` (kept
    by the caller when Ctrl-C stops the run) as it ends."""
    from finsy.proto import p4r

    from innet.controller.client import P4RuntimeClient
    from innet.controller.schema import P4Schema

    p4info, config = compile_program()
    schema = P4Schema(p4info)
    inserts = [route(schema, (10 << 24) | i, 32) for i in range(entries)]
    deletes = [p4r.Update(type=p4r.Update.DELETE, entity=u.entity) for u in inserts]
    rows = [] if rows is None else rows
    with switch_process("--no-p4") as (_, address), P4RuntimeClient(address) as client:
        client.set_pipeline(p4info, config)
        for batch in (1, entries):
            progress(f"Write, batches of {batch}")
            spent = {"INSERT": 0.0, "DELETE": 0.0}
            done = 0
            start = time.monotonic()
            for _ in range(rounds):
                for op, updates in (("INSERT", inserts), ("DELETE", deletes)):
                    t0 = time.perf_counter()
                    for i in range(0, entries, batch):
                        client.write(updates[i:i + batch])
                    spent[op] += time.perf_counter() - t0
                done += 1
                if time.monotonic() - start > max_seconds:
                    break
            for op, seconds in spent.items():
                rows.append(WriteRow(op=op, batch=batch, entries=done * entries, rounds=done,
                                     seconds=round(seconds, 3), entries_per_s=round(done * entries / seconds)))
    return rows


# -- 2. packets through veths -------------------------------------------------------------

SENDER = r"""
import json, socket, sys, time
iface, frames_hex, count, seconds, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
frames = [bytes.fromhex(h) for h in frames_hex.split(",")]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
send, n, k = s.send, 0, len(frames)
t0 = time.perf_counter(); deadline = t0 + seconds
while n < count:
    now = time.perf_counter()
    if now > deadline:
        break
    if rate > 0 and n > rate * (now - t0):
        time.sleep(n / rate - (now - t0))
        continue
    for _ in range(16):
        try:
            send(frames[n % k])
        except BlockingIOError:
            pass
        n += 1
print(json.dumps({"sent": n, "seconds": time.perf_counter() - t0}), flush=True)
"""

RECEIVER = r"""
import json, socket, sys, time
iface, mac, seconds = sys.argv[1], bytes.fromhex(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind((iface, 0)); s.settimeout(0.5)
print("ready", flush=True)
n, first, last = 0, None, None
deadline = time.monotonic() + seconds
buf = bytearray(2048)
while time.monotonic() < deadline:
    try:
        size = s.recv_into(buf)
    except socket.timeout:
        if first is not None:
            break
        continue
    if buf[:6] == mac and buf[12:14] == b"\x08\x00":
        now = time.perf_counter()
        first = now if first is None else first
        last = now
        n += 1
print(json.dumps({"received": n, "seconds": (last - first) if n > 1 else 0.0}), flush=True)
"""


@contextlib.contextmanager
def veth_pair_namespaces() -> Iterator[None]:
    """The two namespaces (sender A, receiver B) and their veths to the switch's ports; a
    crashed run's are removed first."""
    with contextlib.ExitStack() as stack:
        for ns, inner, outer in ((NS_A, IF_A, IF_S1), (NS_B, IF_B, IF_S2)):
            stack.enter_context(VethPair(ns, outer=outer, inner=inner, tx_checksum=False))
        yield


def _frames(n: int, size: int) -> list[bytes]:
    out = []
    for i in range(n):
        payload = b"innetbench" + bytes(max(0, size - 14 - 20 - 8 - 10))
        udp = struct.pack("!HHHH", 1234, 5678, 8 + len(payload), 0) + payload
        hdr = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0, 0x0A000101, 0x0A000200 | i)
        words = sum(struct.unpack("!10H", hdr))
        words = (words & 0xFFFF) + (words >> 16)
        hdr = hdr[:10] + struct.pack("!H", ~((words & 0xFFFF) + (words >> 16)) & 0xFFFF) + hdr[12:]
        out.append(bytes.fromhex("000000000001" "000000000101" "0800") + hdr + udp)
    return out


def cpu_split() -> tuple[set[int], set[int]] | None:
    """(switch CPUs, sender/receiver CPUs) when there are at least two, else None."""
    cpus = sorted(os.sched_getaffinity(0))
    return ({cpus[-1]}, set(cpus[:-1])) if len(cpus) >= 2 else None


def _in_ns(ns: str, script: str, *args: str) -> subprocess.Popen[str]:
    split = cpu_split()
    pin = ["taskset", "-c", ",".join(map(str, sorted(split[1])))] if split else []
    return subprocess.Popen([*pin, "ip", "netns", "exec", ns, sys.executable, "-c", script, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _one_run(pid: int, frames: list[bytes], count: int, seconds: float, rate: float) -> PacketRow:
    receiver = _in_ns(NS_B, RECEIVER, IF_B, f"{OUT_MAC:012x}", str(seconds + 10))
    sender = None
    try:
        assert receiver.stdout is not None
        if receiver.stdout.readline().strip() != "ready":
            raise RuntimeError(f"receiver failed: {receiver.stderr.read()}")  # type: ignore[union-attr]
        cpu0 = cpu_seconds(pid)
        sender = _in_ns(NS_A, SENDER, IF_A, ",".join(f.hex() for f in frames), str(count), str(seconds), str(rate))
        sent_out, sent_err = sender.communicate(timeout=seconds + 30)
        if sender.returncode != 0:
            raise RuntimeError(f"sender failed: {sent_err}")
        recv_out, recv_err = receiver.communicate(timeout=seconds + 30)
        cpu = cpu_seconds(pid) - cpu0
        sent, got = json.loads(sent_out), json.loads(recv_out)
    finally:
        for proc in (sender, receiver):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    forwarded_rate = got["received"] / got["seconds"] if got["seconds"] else 0.0
    return PacketRow(frame_bytes=len(frames[0]), offered_pkt_per_s="max" if rate == 0 else round(rate),
                     sent=sent["sent"], send_rate=round(sent["sent"] / sent["seconds"]),
                     received=got["received"], loss=round(1 - got["received"] / max(1, sent["sent"]), 4),
                     forwarded_pkt_per_s=round(forwarded_rate), switch_cpu_s=round(cpu, 2),
                     pkt_per_switch_cpu_s=round(got["received"] / cpu) if cpu > 0 else 0,
                     switch_cpu_util=round(cpu / max(sent["seconds"], 1e-9), 2))


def bench_packets(rates: list[float], frames: int, seconds: float, size: int, rows: list[PacketRow] | None = None,
                  progress: Callable[[str], None] = lambda _: None) -> list[PacketRow]:
    """One run per offered rate; each row appended to ``rows`` as it ends (see bench_writes)."""
    from innet.controller.client import P4RuntimeClient
    from innet.controller.schema import P4Schema

    if os.geteuid() != 0:
        raise RuntimeError("the packet benchmark needs root (namespaces, veths, AF_PACKET)")
    p4info, config = compile_program()
    schema = P4Schema(p4info)
    rows = [] if rows is None else rows
    with veth_pair_namespaces(), \
            switch_process("--no-p4", "-i", f"1@{IF_S1}", "-i", f"2@{IF_S2}",
                           cpus=split[0] if (split := cpu_split()) else None) as (proc, address):
        with P4RuntimeClient(address) as client:
            client.set_pipeline(p4info, config)
            client.write([route(schema, 0x0A000200, 24)])
        built = _frames(64, size)
        for rate in rates:
            progress(f"packets, {'as fast as the sender goes' if rate == 0 else f'{rate:g} pkt/s offered'}")
            count = frames if rate == 0 else min(frames, int(rate * seconds))
            rows.append(_one_run(proc.pid, built, count, seconds, rate))
    return rows


# -- report ------------------------------------------------------------------------------


def print_tables(m: Machine, writes_done: list[WriteRow], packets_done: list[PacketRow] | None) -> None:
    """The Write table, and the packets' (when they ran), captioned with the machine ``m``."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    writes = Table(title=f"P4Runtime Write throughput, innet-switch on loopback ({m.cpu}, {m.cores} cores)")
    for col in ("op", "batch", "entries", "seconds", "entries/s"):
        writes.add_column(col, justify="right")
    for r in writes_done:
        writes.add_row(r.op, str(r.batch), f"{r.entries:,}", f"{r.seconds:.2f}", f"{r.entries_per_s:,}")
    console.print(writes)
    if packets_done:
        packets = Table(title="basic_forward through innet-switch on veths (AF_PACKET ports)")
        for col in ("offered pkt/s", "sent", "received", "loss", "forwarded pkt/s", "switch CPU",
                    "pkt per switch CPU-s"):
            packets.add_column(col, justify="right")
        for p in packets_done:
            packets.add_row(str(p.offered_pkt_per_s), f"{p.sent:,}", f"{p.received:,}",
                            f"{p.loss:.1%}", f"{p.forwarded_pkt_per_s:,}", f"{p.switch_cpu_util:.0%}",
                            f"{p.pkt_per_switch_cpu_s:,}")
        console.print(packets)


def _rates(text: str) -> str:
    """``--rates``: comma-separated offered rates >= 0 (checked here, split where used)."""
    try:
        if any(float(r) < 0 for r in text.split(",") if r):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated rates >= 0 in pkt/s") from None
    return text


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of ``innet bench p4runtime``."""
    add_out(ap, "JSON")
    ap.add_argument("--write-rounds", type=int_range(1), default=5, help="insert+delete rounds of 1000 entries per batch size")
    ap.add_argument("--max-seconds", type=positive_float, default=30.0, help="stop the rounds of one batch size after this")
    ap.add_argument("--skip-packets", action="store_true", help="only the Write benchmark (no root needed)")
    ap.add_argument("--rates", type=_rates, default="0,10000,20000,30000,40000,50000",
                    help="comma-separated offered rates in pkt/s; 0 = as fast as the sender goes")
    ap.add_argument("--frames", type=int_range(1), default=1_000_000, help="at most this many frames per run")
    ap.add_argument("--seconds", type=positive_float, default=5.0, help="at most this long per run")
    ap.add_argument("--size", type=int_range(64, 9000), default=64, help="frame size in bytes (without FCS)")


def command(args: argparse.Namespace) -> int:
    """``innet bench p4runtime``: Write batches, then (unless --skip-packets) packets on veths."""
    facts = machine()
    m = facts.to_json()
    result: dict[str, object] = {
        "machine": m, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "settings": {"program": str(PROGRAM.relative_to(REPO)), "write_rounds": args.write_rounds,
                     "max_seconds": args.max_seconds, "rates": args.rates, "frames": args.frames,
                     "seconds": args.seconds, "size": args.size,
                     "transport": "gRPC over 127.0.0.1, unary Write, one client",
                     "pinning": (f"switch on CPU {sorted(split[0])}, sender/receiver on {sorted(split[1])}"
                                 if (split := cpu_split()) else "none (one CPU)")},
    }
    rates = [] if args.skip_packets else [float(r) for r in args.rates.split(",") if r]
    writes: list[WriteRow] = []
    packets: list[PacketRow] | None = None if args.skip_packets else []
    partial = False
    # the bar counts the points started (each message starts one)
    with Reporter(console(), "bench p4runtime", total=2 + len(rates), counts=lambda _: True, markup=False) as report:
        try:
            bench_writes(args.write_rounds, args.max_seconds, rows=writes, progress=report)
            if packets is not None:
                bench_packets(rates, args.frames, args.seconds, args.size, rows=packets, progress=report)
        except KeyboardInterrupt:
            partial = True
    m["loadavg_at_end"] = os.getloadavg()
    result = {**result, "writes": [r.to_json() for r in writes], "partial": partial,
              **({} if packets is None else {"packets": [p.to_json() for p in packets]})}
    print_tables(facts, writes, packets)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "bench_p4runtime.json"
    path.write_text(json.dumps(result, indent=2))
    if partial:
        return interrupted_partial("innet bench p4runtime", path)
    print(f"saved {path}")
    return 0
