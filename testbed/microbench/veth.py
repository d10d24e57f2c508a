"""``innet-switch`` on one veth pair against the ceiling of that veth, measured in the same run.

Run as root: ``innet bench veth [--seconds S] [--window W] [--mtu M]
[--executor python|native] [--port-loop python|native] [--rounds N] [--only WORKLOAD]
[--out results/]``.

It makes a network namespace with one end of a veth pair in it (the other end stays in
the root namespace) and removes both in ``finally``. A closed-loop C sender
(``testbed/microbench/native/sender.c``: a window of frames in flight, ``sendmmsg``/``recvmmsg`` on
AF_PACKET) runs in the namespace; on the root end runs, in turn,

- the **ceiling**: a C reflector (``reflector.c``) that bounces every frame unparsed;
- the **ring ceiling**: the same reflector receiving as innet-switch's C port loop does,
  through a ``PACKET_MMAP`` ring (``reflector.c --rx-ring``). The kernel copies a frame into
  such a ring on the core of the thread that sent it, here the sender's, which is also the
  core the sender needs; so on a small machine this no-op device is slower than the first,
  and the switch's rate against it shows what its pipeline costs;
- **innet-switch** with one AF_PACKET port (``-i 1@<veth>``) running the workload's P4
  program, its table entries installed over P4Runtime by innet's controller;
- with ``--switch-impl innet,bmv2`` (or ``bmv2``), also p4lang's **simple_switch_grpc**
  (``-i 1@<veth>``), the same program compiled by p4c-bm2-ss and pushed over P4Runtime:
  the reference target next to the embedded one, rows labelled by switch.

Workloads (those of ``bench_pipeline``): ``basic_forward`` (p4/examples/basic_forward.p4:
LPM route back to port 1, TTL decrement, checksum update), ``agg64``
(p4/examples/agg64.p4: 64 values added into registers, the sums reflected) and ``agg2048``
(p4/examples/agg2048.p4: the same with 2048 values, 8,238-byte frames; the veth's MTU is
raised to 9000 for it, so its reflector ceilings are measured at that frame size). For each it
prints pkt/s of both reflectors and of the switch, the switch's ratio to each, and saves
``bench_veth.json`` and ``bench_veth.png``. ``--executor`` is passed to innet-switch
(``native`` for the C executor); without it the switch's default runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from innet.polling import PollTimeout, poll_until
from innet.children import end_popen
from innet.testbed.core.machine import describe
from innet.argtypes import console as new_console
from innet.argtypes import Reporter, add_out, add_switch_impl, interrupted_partial, positive_float
from innet.testbed.core.paths import REPO
from innet.testbed.core.veth import VethError, VethPair
from innet.testbed.backends.bmv2 import Bmv2Missing, find_tools
from innet.testbed.microbench.records import Point, SenderCounts, VethBench, VethRow

WORKLOADS = ("basic_forward", "agg64", "agg2048")
REFLECTOR, RING_REFLECTOR = "reflector", "ring reflector"
"""The device names of ``reflector.c`` and of ``reflector.c --rx-ring`` in points."""
DEVICES = {"innet": "innet-switch", "bmv2": "simple_switch_grpc"}
"""The device name of each ``--switch-impl`` in points and rows."""
WORKLOAD_MTU = {"agg2048": 9000}
"""Least veth MTU a workload's frames need (others run at ``--mtu``)."""
SWITCH_MODULE = "innet.switch.cli.switch"
_GRPC_LINE = re.compile(r"innet-switch: P4Runtime listening on (\S+)")
_LOOP_LINE = re.compile(r"C port loop stats: (\{.*\})")


class BenchError(RuntimeError):
    """A step of the benchmark failed; names the step and the reason."""


@dataclass(frozen=True)
class VethBenchConfig:
    """Settings of one run."""

    seconds: float = 3.0
    """Measured seconds per point (after ``warmup``)."""
    warmup: float = 0.5
    """Seconds of traffic before counting."""
    window: int = 64
    """Frames the sender keeps in flight."""
    mtu: int = 1500
    """MTU of both veth ends."""
    executor: str | None = None
    """``innet-switch --executor`` value; None: the switch's default (flag not passed)."""
    rounds: int = 1
    """Reflector/switch pairs measured one after the other per workload; the row reports
    medians and the median of the per-round ratios (a pair is measured seconds apart, so
    its ratio suffers less from other load on the machine than one-shot figures)."""
    port_loop: str | None = None
    """``innet-switch --port-loop`` value (native: the C loop; python: one Python call per
    frame); None: the switch's default (the C loop with the native executor)."""
    workloads: tuple[str, ...] = WORKLOADS
    switch_impls: tuple[str, ...] = ("innet",)
    """Switches measured on the veth, each after the reflector in every round: ``innet``
    (innet-switch) and/or ``bmv2`` (p4lang's simple_switch_grpc, the program compiled by p4c-bm2-ss)."""
    start_timeout: float = 300.0
    """Seconds innet-switch may take to compile its program and listen."""


# -- the veth pair ---------------------------------------------------------------------------

def veth_pair(mtu: int) -> VethPair:
    """This run's pair (names from the process id)."""
    tag = f"{os.getpid() % 100000}"
    return VethPair(f"innet-bv{tag}", outer=f"ibvo{tag}", inner=f"ibvi{tag}", mtu=mtu)


# -- traffic ---------------------------------------------------------------------------------

def _frames(workload: str) -> list[bytes]:
    """Frames that the workload's program answers on port 1 (from its STF, or built)."""
    from innet.switch.stf import read_stf

    if workload in ("agg64", "agg2048"):
        test = read_stf(REPO / "p4" / "examples" / f"{workload}.stf")
        frames = [data for _, port, data in test.packets if len(data) > 300]
        return frames[:3]
    if workload == "basic_forward":
        from innet import wire

        frames = []
        for i in range(16):
            ip = wire.IPV4.pack(0x45, 0, 20 + 26, i, 0, 64, 17, 0, wire.ip_bytes("10.0.0.2"),
                                wire.ip_bytes(f"10.0.1.{i + 1}"))
            ip = ip[:10] + wire.ipv4_checksum(ip).to_bytes(2, "big") + ip[12:]
            frames.append(wire.ETH.pack(b"\x00\x00\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x02", 0x0800)
                          + ip + bytes(26))
        return frames
    raise BenchError(f"workload {workload!r}: expected one of {', '.join(WORKLOADS)}")


def _setup_tables(workload: str, address: str, pipeline: Any = None) -> None:
    """The workload's table entries (``pipeline``: a PipelineConfig to push first, for BMv2)."""
    if workload != "basic_forward" and pipeline is None:
        return
    from innet.controller.entities import Lpm, TableEntry
    from innet.controller.switch import Switch, SwitchEndpoint

    with Switch(SwitchEndpoint("s1", address, timeout=30.0)) as sw:
        if pipeline is not None:
            sw.push(pipeline)
        if workload != "basic_forward":
            return
        sw.insert([TableEntry("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm("10.0.1.0", 24)}, "ipv4_forward",
                              {"dstAddr": 0x000000000101, "port": 1})])


def _send(pair: VethPair, sender: Path, frames_file: Path, config: VethBenchConfig) -> SenderCounts:
    cmd = ["ip", "netns", "exec", pair.ns, str(sender), pair.inner, str(frames_file), str(config.window),
           str(config.seconds), str(config.warmup)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=config.seconds + config.warmup + 60)
    if done.returncode != 0:
        raise BenchError(f"sender: {done.stderr.strip() or f'exit {done.returncode}'}")
    return SenderCounts.from_json(json.loads(done.stdout.strip().splitlines()[-1]))


def _wait(condition: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen[Any],
          log: Path) -> None:
    def ready() -> bool:
        if condition():
            return True
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
            raise BenchError(f"{what}: process exited with status {proc.returncode}: {' | '.join(tail)}")
        return False

    try:
        poll_until(ready, timeout, interval=0.02, what=what)
    except PollTimeout as error:
        raise BenchError(str(error)) from None


def measure_reflector(pair: VethPair, workload: str, frames_file: Path, frame_bytes: int,
                      config: VethBenchConfig, tools: dict[str, Path], tmp: Path, rx_ring: bool = False) -> Point:
    """The reflector's point; ``rx_ring``: receiving through a ring, as innet-switch does."""
    log = tmp / "reflector.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(tools["reflector"]), pair.outer, *(["--rx-ring"] if rx_ring else [])],
                                stdout=subprocess.PIPE, stderr=out, text=True)
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise BenchError(f"reflector did not start: {log.read_text().strip()}")
        r = _send(pair, tools["sender"], frames_file, config)
    finally:
        end_popen(proc)
    return Point(workload, RING_REFLECTOR if rx_ring else REFLECTOR, frame_bytes, r.pps, r.sent, r.received,
                 r.reprimes)


def measure_switch(pair: VethPair, workload: str, frames_file: Path, frame_bytes: int,
                   config: VethBenchConfig, tools: dict[str, Path], tmp: Path) -> Point:
    program = REPO / "p4" / "examples" / f"{workload}.p4"
    cmd = [sys.executable, "-m", SWITCH_MODULE, str(program), "-i", f"1@{pair.outer}",
           "--grpc-server-addr", "127.0.0.1:0", "--log-level", "info"]
    if config.executor is not None:
        cmd += ["--executor", config.executor]
    if config.port_loop is not None:
        cmd += ["--port-loop", config.port_loop]
    log = tmp / f"switch-{workload}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        address: list[str] = []

        def listening() -> bool:
            m = _GRPC_LINE.search(log.read_text(errors="replace"))
            if m:
                address.append(m.group(1))
            return bool(m)

        _wait(listening, config.start_timeout, f"innet-switch ({workload})", proc, log)
        _setup_tables(workload, address[0])
        r = _send(pair, tools["sender"], frames_file, config)
    finally:
        end_popen(proc)
    return Point(workload, "innet-switch", frame_bytes, r.pps, r.sent, r.received, r.reprimes,
                 loop_breakdown(log.read_text(errors="replace")))


def measure_bmv2(pair: VethPair, workload: str, frames_file: Path, frame_bytes: int,
                 config: VethBenchConfig, tools: dict[str, Path], tmp: Path, bmv2: Any) -> Point:
    """simple_switch_grpc with the veth as port 1, the program compiled by p4c-bm2-ss and pushed
    over P4Runtime (as the testbed does), the same sender and frames as innet-switch."""
    from innet.testbed.backends.bmv2 import Bmv2Error, Bmv2SwitchConfig, pipeline, switch_command, wait_grpc
    from innet.testbed.core.freeport import free_port

    program = REPO / "p4" / "examples" / f"{workload}.p4"
    try:
        compiled = pipeline(program, bmv2, tmp / f"bmv2-{workload}")
    except Bmv2Error as error:
        raise BenchError(str(error)) from None
    switch = Bmv2SwitchConfig(ports=((1, pair.outer),), grpc_address=f"127.0.0.1:{free_port()}",
                              thrift_port=free_port())
    log = tmp / f"bmv2-{workload}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(switch_command(bmv2.switch, switch), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    try:
        try:
            wait_grpc(switch.grpc_address, config.start_timeout, alive=lambda: proc.poll() is None)
        except Bmv2Error as error:
            tail = log.read_text(errors="replace").strip().splitlines()[-3:]
            raise BenchError(f"{error}: {' | '.join(tail)}") from None
        _setup_tables(workload, switch.grpc_address, compiled)
        r = _send(pair, tools["sender"], frames_file, config)
    finally:
        end_popen(proc)
    return Point(workload, DEVICES["bmv2"], frame_bytes, r.pps, r.sent, r.received, r.reprimes)


def loop_breakdown(log: str) -> dict[str, float] | None:
    """Frames per batch and ns per frame by stage from the switch's "C port loop stats"
    line (None when the Python port loop served the port)."""
    m = _LOOP_LINE.search(log)
    if not m:
        return None
    st = json.loads(m.group(1))
    frames = max(1, st["rx"])
    out = {"frames_per_batch": st["rx"] / max(1, st["batches"])}
    for stage in ("recv", "lock", "process", "send", "wait"):
        out[f"ns_{stage}_per_frame"] = st[f"ns_{stage}"] / frames
    return out


def switch_has_executor_flag() -> bool:
    """True when this innet-switch accepts ``--executor`` (the native executor is merged)."""
    done = subprocess.run([sys.executable, "-m", SWITCH_MODULE, "--help"], capture_output=True, text=True,
                          timeout=60)
    return "--executor" in done.stdout


def measure(config: VethBenchConfig, progress: Callable[[str], None] = lambda _: None,
            bmv2: Any = None, absent: dict[str, str] | None = None) -> VethBench:
    """Measure every workload. ``bmv2``: BMv2's tools (``find_tools``), needed when
    ``config.switch_impls`` has bmv2; ``absent``: implementations asked for but not installed,
    (name: why), recorded in the document."""
    from innet.native_build import NativeBuildError
    from innet.testbed.microbench.native import tool

    if "bmv2" in config.switch_impls and bmv2 is None:
        raise BenchError("switch_impls has bmv2 but no BMv2 tools were given (find_tools)")
    try:
        tools = {name: tool(name) for name in ("sender", "reflector")}
    except NativeBuildError as error:
        raise BenchError(f"C tools: {error}") from None
    points: list[Point] = []
    try:  # Ctrl-C: the veths and processes go with their withs; the rows of complete rounds are kept
        _measure(config, progress, bmv2, tools, points)
        partial = False
    except KeyboardInterrupt:
        partial = True
    rows: list[VethRow] = []
    for workload in config.workloads:
        devices = {p.device for p in points if p.workload == workload}
        if not devices >= {REFLECTOR, RING_REFLECTOR, *(DEVICES[i] for i in config.switch_impls)}:
            continue  # Ctrl-C before one round of it was complete
        mtu = max(config.mtu, WORKLOAD_MTU.get(workload, 0))
        ceilings = [p for p in points if p.workload == workload and p.device == REFLECTOR]
        ring_ceilings = [p for p in points if p.workload == workload and p.device == RING_REFLECTOR]
        for impl in config.switch_impls:
            switches = [p for p in points if p.workload == workload and p.device == DEVICES[impl]]
            ratios = _ratios(switches, ceilings)
            ring_ratios = _ratios(switches, ring_ceilings)
            middle = sorted(zip(ratios, range(len(ratios))))[len(ratios) // 2][1]
            rows.append(VethRow(
                workload=workload, switch=DEVICES[impl], frame_bytes=switches[0].frame_bytes, mtu=mtu,
                ceiling_pps=round(statistics.median(c.pps for c in ceilings)),
                ring_ceiling_pps=round(statistics.median(c.pps for c in ring_ceilings)),
                switch_pps=round(statistics.median(s.pps for s in switches)),
                ratio=round(statistics.median(ratios), 3), round_ratios=tuple(round(r, 3) for r in ratios),
                ring_ratio=round(statistics.median(ring_ratios), 3),
                round_ring_ratios=tuple(round(r, 3) for r in ring_ratios),
                round_ceiling_pps=tuple(round(c.pps) for c in ceilings),
                round_ring_ceiling_pps=tuple(round(c.pps) for c in ring_ceilings),
                round_switch_pps=tuple(round(s.pps) for s in switches), loop=switches[middle].loop))
    return VethBench(date=time.strftime("%Y-%m-%dT%H:%M:%S"), machine=describe(),
                     executor=config.executor or "default", port_loop=config.port_loop or "default",
                     settings=asdict(config), points=tuple(points), rows=tuple(rows),
                     switch_absent=dict(absent or {}), partial=partial)


def _measure(config: VethBenchConfig, progress: Callable[[str], None], bmv2: Any, tools: dict[str, Path],
             points: list[Point]) -> None:
    """Every round of every workload on one veth pair, each point appended to ``points`` as it is measured."""
    from innet.testbed.microbench.native import write_frames

    with tempfile.TemporaryDirectory(prefix="innet-bench-veth-") as tmpdir, veth_pair(config.mtu) as pair:
        tmp = Path(tmpdir)
        for workload in config.workloads:
            pair.set_mtu(max(config.mtu, WORKLOAD_MTU.get(workload, 0)))
            frames = _frames(workload)
            frames_file = tmp / f"{workload}.frames"
            write_frames(frames_file, frames)
            for k in range(config.rounds):
                step = f" (round {k + 1}/{config.rounds})" if config.rounds > 1 else ""
                for rx_ring in (False, True):
                    progress(f"{workload}: {RING_REFLECTOR if rx_ring else REFLECTOR} ceiling on {pair.outer}{step}")
                    points.append(measure_reflector(pair, workload, frames_file, len(frames[0]), config, tools, tmp,
                                                    rx_ring))
                for impl in config.switch_impls:
                    progress(f"{workload}: {DEVICES[impl]} on {pair.outer}{step}")
                    if impl == "bmv2":
                        points.append(measure_bmv2(pair, workload, frames_file, len(frames[0]), config, tools, tmp,
                                                   bmv2))
                    else:
                        points.append(measure_switch(pair, workload, frames_file, len(frames[0]), config, tools,
                                                     tmp))


def _ratios(switches: list[Point], ceilings: list[Point]) -> list[float]:
    """Each round's switch rate over that round's ceiling."""
    return [s.pps / c.pps if c.pps else 0.0 for c, s in zip(ceilings, switches)]


def save(doc: dict[str, Any], out: Path) -> tuple[Path, Path | None]:
    """Write the document (:meth:`~innet.testbed.microbench.records.VethBench.to_json`) as
    ``bench_veth.json`` and draw it; no plot without matplotlib."""
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "bench_veth.json"
    json_path.write_text(json.dumps(doc, indent=2))
    try:
        from innet.testbed.core.report import pyplot

        plt = pyplot()
    except ImportError:
        return json_path, None
    rows = doc["rows"]
    # linear bars: the annotated ratios are what a reader compares, and a log axis makes a
    # 0.64x gap look as tall as 10x
    fig, ax = plt.subplots(figsize=(8, 3.4))
    x = list(range(len(rows)))
    ax.bar([i - 0.27 for i in x], [r["ceiling_pps"] / 1e3 for r in rows], width=0.27, color="tab:gray",
           label="C reflector (ceiling)")
    if any(r.get("ring_ceiling_pps") for r in rows):
        ax.bar(x, [r.get("ring_ceiling_pps", 0) / 1e3 for r in rows], width=0.27, color="silver",
               label="C reflector, RX ring")
    colors = {"innet-switch": "tab:blue", "simple_switch_grpc": "tab:orange"}
    for device, color in colors.items():
        at = [i for i, r in enumerate(rows) if r.get("switch", "innet-switch") == device]
        if at:
            label = f"innet-switch ({doc['executor']})" if device == "innet-switch" else "BMv2 simple_switch_grpc"
            ax.bar([i + 0.27 for i in at], [rows[i]["switch_pps"] / 1e3 for i in at], width=0.27, color=color,
                   label=label)
    for i, r in enumerate(rows):
        ax.annotate(f"{r['ratio']:.2f}x", (i + 0.27, r["switch_pps"] / 1e3), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, [f"{r['workload']}\n{r['frame_bytes']} B\n{r.get('switch', 'innet-switch')}" for r in rows],
                  fontsize=6)
    ax.set_ylabel("thousand packets/s", fontsize=8)
    m, s = doc["machine"], doc["settings"]
    ax.set_title(f"one veth port, closed loop; ratio: switch / C reflector\n{m['cpu'][:40]} ({m['cores']} cores), "
                 f"window {s['window']}, MTU {s['mtu']}", fontsize=7)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    png = out / "bench_veth.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return json_path, png


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of ``innet bench veth``."""
    ap.add_argument("--seconds", type=positive_float, default=3.0, help="measured seconds per point (default 3)")
    ap.add_argument("--window", type=int, default=64, help="frames in flight, 1..65536 (default 64)")
    ap.add_argument("--mtu", type=int, default=1500, help="veth MTU, 576..9000 (default 1500)")
    ap.add_argument("--executor", choices=["python", "native"], default=None,
                    help="innet-switch --executor (default: the switch's own default)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="reflector/switch pairs per workload, 1..20; medians are reported (default 1)")
    ap.add_argument("--port-loop", choices=["python", "native"], default=None,
                    help="innet-switch --port-loop (default: the switch's own default)")
    ap.add_argument("--only", action="append", choices=list(WORKLOADS), help="one workload (repeatable)")
    add_switch_impl(ap, several=True, note="; bmv2 runs the program compiled by p4c-bm2-ss")
    add_out(ap)


def command(args: argparse.Namespace) -> int:
    """``innet bench veth`` (root): each switch on one veth against the C reflectors."""
    if not 1 <= args.window <= 1 << 16:
        print(f"innet bench veth: --window {args.window}: must be within 1..65536", file=sys.stderr)
        return 2
    if not 1 <= args.rounds <= 20:
        print(f"innet bench veth: --rounds {args.rounds}: must be within 1..20", file=sys.stderr)
        return 2
    if not 576 <= args.mtu <= 9000:
        print(f"innet bench veth: --mtu {args.mtu}: must be within 576..9000", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("innet bench veth: needs root (network namespace, veth pair, AF_PACKET sockets)", file=sys.stderr)
        return 2
    if args.executor is not None and not switch_has_executor_flag():
        print(f"innet bench veth: --executor {args.executor}: this innet-switch has no --executor option yet "
              "(the native executor is not merged)", file=sys.stderr)
        return 2
    impls, bmv2, absent = args.switch_impl, None, {}
    if "bmv2" in impls:
        try:
            bmv2 = find_tools()
        except Bmv2Missing as missing:
            if len(impls) == 1:
                print(f"innet bench veth: {missing}", file=sys.stderr)
                return 2
            print(f"innet bench veth: no simple_switch_grpc rows: {missing}", file=sys.stderr)
            impls, absent = tuple(i for i in impls if i != "bmv2"), {"bmv2": str(missing)}
    config = VethBenchConfig(seconds=args.seconds, window=args.window, mtu=args.mtu, executor=args.executor,
                             port_loop=args.port_loop, rounds=args.rounds, workloads=tuple(args.only or WORKLOADS),
                             switch_impls=impls)
    from rich.table import Table

    console = new_console()  # piped: room for every column
    try:
        points = len(config.workloads) * config.rounds * (2 + len(config.switch_impls))  # 2 reflectors
        with Reporter(console, "bench veth", total=points, counts=lambda msg: " on " in msg) as report:
            bench = measure(config, report, bmv2, absent)
    except (BenchError, VethError) as error:
        print(f"innet bench veth: {error}", file=sys.stderr)
        return 1
    m = bench.machine
    table = Table(title=f"switches on one veth vs the C reflector ({m.cpu}, {m.cores} cores, "
                        f"load {m.load_average}; innet-switch executor {bench.executor}, port loop "
                        f"{bench.port_loop}, window {config.window})",
                  caption="".join(f"no {i} rows: {why}\n" for i, why in bench.switch_absent.items()) or None)
    for col in ("workload", "switch", "bytes/frame", "MTU", "reflector pkt/s", "ring reflector pkt/s",
                "switch pkt/s", "ratio", "round ratios", "vs ring reflector"):
        table.add_column(col, justify="left" if col in ("workload", "switch") else "right")
    for r in bench.rows:
        table.add_row(r.workload, r.switch, str(r.frame_bytes), str(r.mtu), f"{r.ceiling_pps:,}",
                      f"{r.ring_ceiling_pps:,}", f"{r.switch_pps:,}", f"{r.ratio:.2f}x",
                      " ".join(f"{x:.2f}" for x in r.round_ratios), f"{r.ring_ratio:.2f}x")
    console.print(table)
    for r in bench.rows:
        if r.loop:
            lp = r.loop
            console.print(f"{r.workload}: C port loop {lp['frames_per_batch']:.1f} frames/batch; ns per frame: "
                          + ", ".join(f"{k[3:-10]} {v:.0f}" for k, v in lp.items() if k.startswith("ns_")))
    json_path, png = save(bench.to_json(), args.out)
    console.print(f"saved {json_path}" + (f" and {png}" if png else ""))
    return interrupted_partial("innet bench veth", json_path) if bench.partial else 0
