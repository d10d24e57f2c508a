"""Executor throughput benchmark: packets per second of ``Pipeline.process`` on one core.

Run as ``innet bench pipeline [--executor native|python|auto] [--seconds S]
[--rounds N] [--out results/] [--only NAME]``. ``--executor native`` runs the generated-C
executor (``innet.switch.native``) and feeds it the replayed packets in batches through
``NativePipeline.process_many`` (one call into C per batch, as a port loop does; a batch
holds up to 1024 packets and about 512 KiB); the python executor is fed one ``process``
call per packet. For the native executor the *executor alone* is measured too: the same
batches handed to the C entry point ``sw_process`` directly, without the Python
conversions of ``process_many`` (what innet-switch's C port loop calls per batch).
Targets of the native executor: >= 1,000,000 pkt per CPU-second on basic_forward, >=
500,000 on agg64, and on agg2048 >= 1 G element-updates per CPU-second (the executor
alone; an element update is one value added into its register and written back).
``--rounds`` repeats every measurement and reports the median and the spread. Workloads:

- ``basic_forward``: Ethernet/IPv4, LPM lookup (256 /24 routes), TTL decrement, IPv4
  checksum update (``update_checksum`` csum16) -- target >= 100,000 pkt/s;
- ``agg64``: 64 bit<32> header values added into 64 register arrays per packet --
  target >= 30,000 pkt/s;
- ``agg2048``: agg64 with 2048 values (8,238-byte frames, a 9000-byte MTU's jumbo frame),
  2048 register arrays that the native executor fuses into one block (no python target);
- ``innet_sum`` / ``innet_momentum``: ``p4/innet.p4`` at K=64, one job of 4 workers in
  sum or momentum mode (targets 40,000 and 25,000 pkt/s). The job is set up through the
  pipeline API (``switch_addr`` default action, ``innet_jobs`` entry, ``innet_workers``
  entries, multicast group) and the CONTRIB frames are built with ``innet.wire``:
  every worker contributes to 64 slots with copy 0, then with copy 1, so the replayed
  sequence is steady state (each 4th packet completes a copy and is multicast to the 4
  workers; momentum completions update 64 parameters and momenta).

The basic_forward/agg64/agg2048 programs are ``p4/examples/<name>.p4``: the control-plane commands
of the example's ``.stf`` are applied and its packets that produce output are replayed.
Both wall-clock and CPU time (``time.process_time``) are measured: the machine may be
shared, and pkt per CPU-second is the figure that does not depend on the share of a core
the process got. Prints a rich table and saves JSON (and a PNG when matplotlib is
installed) naming the machine and settings.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from innet.testbed.core.machine import describe
from innet.argtypes import console as new_console
from innet.argtypes import add_executor, add_out, interrupted_partial, measure_each, positive_float
from innet.testbed.core.paths import REPO
from innet.testbed.microbench.records import ExecutorRow

TARGETS = {"basic_forward": 100_000, "agg64": 30_000, "agg2048": 0, "innet_sum": 40_000, "innet_momentum": 25_000,
           "innet_sum_k1024": 0, "innet_momentum_k1024": 0}
NATIVE_TARGETS = {"basic_forward": 1_000_000, "agg64": 500_000}
ELEMENT_TARGETS = {"agg2048": 1_000_000_000}
"""Element updates per CPU-second of the native executor alone."""
BATCH_BYTES = 1 << 19
"""Bytes of frames per ``process_many`` batch (at most 1024 frames)."""
EXECUTOR = "python"
"""Set by ``main`` (``--executor``): how the workloads load their pipelines."""
INNET_K = 64
INNET_WORKERS = 4
INNET_SLOTS = 64  # slots used by the benchmark job (of the program's INNET_SLOTS)


@dataclass
class Workload:
    name: str
    program: Path
    pipeline: Any
    packets: list[tuple[int, bytes]]
    what: str
    values_per_packet: int = 0


def _batch(pkts: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """The replayed packets repeated into one batch of <= 1024 frames and ~BATCH_BYTES."""
    size = max(1, sum(len(d) for _, d in pkts) // max(len(pkts), 1))
    n = max(1, min(1024, BATCH_BYTES // size))
    return (pkts * (n // max(len(pkts), 1) + 1))[:n]


def measure(pl: Any, pkts: list[tuple[int, bytes]], seconds: float) -> tuple[float, float, int]:
    """(pkt per wall second, pkt per CPU second, packets) over at least ``seconds`` of
    back-to-back ``process`` calls."""
    many = getattr(pl, "process_many", None)
    process = pl.process
    for port, data in pkts[:64]:  # warm up caches
        process(port, data)
    batch = _batch(pkts)
    n = 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    deadline = t0 + seconds
    while True:
        if many is not None:
            many(batch)
            n += len(batch)
        else:
            for port, data in pkts:
                process(port, data)
            n += len(pkts)
        now = time.perf_counter()
        if now >= deadline:
            break
    cpu = time.process_time() - c0
    return n / (now - t0), n / max(cpu, 1e-9), n


def measure_executor(pl: Any, pkts: list[tuple[int, bytes]], seconds: float) -> float:
    """Packets per CPU second of the native executor alone: ``sw_process`` on a prepared
    batch (inputs converted once, outputs left in C), as the C port loop calls it."""
    ffi, lib = pl.ffi, pl.lib
    batch = _batch(pkts)
    blob = b"".join(d for _, d in batch)
    data = ffi.from_buffer("uint8_t[]", blob)
    lens = ffi.new("uint32_t[]", [len(d) for _, d in batch])
    ports = ffi.new("uint32_t[]", [p for p, _ in batch])
    n = 0
    with pl.lock:
        t0, c0 = time.perf_counter(), time.process_time()
        while time.perf_counter() - t0 < seconds:
            lib.sw_process(pl.sw, len(batch), data, lens, ports, 0)
            n += len(batch)
        cpu = time.process_time() - c0
    return n / max(cpu, 1e-9)


def load_example(name: str) -> Workload:
    """``p4/examples/<name>.p4`` with the control plane and forwarded packets of its ``.stf``."""
    from innet.switch.pipeline import Pipeline
    from innet.switch.stf import apply_control, read_stf

    example = REPO / "p4" / "examples" / f"{name}.p4"
    stf = example.with_suffix(".stf")
    if not (example.is_file() and stf.is_file()):
        raise FileNotFoundError(f"{name}: benchmark program {example} or its {stf.name} is missing")
    pl = _load(example)
    test = read_stf(stf)
    for _, cmd, args in test.control:
        apply_control(pl, cmd, args)
    pkts = [(port, data) for _, port, data in test.packets if pl.process(port, data)]
    values = int(name[3:]) if name.startswith("agg") else 0
    return Workload(name, example, pl, pkts, f"{len(pkts)} forwarded packet(s) of {stf.name}", values)


def load_innet(mode: str, k: int = INNET_K, workers: int = INNET_WORKERS, slots: int = INNET_SLOTS,
               seed: int = 1) -> Workload:
    """``p4/innet.p4`` (K=k) with one job of ``workers`` workers in ``mode`` (sum, sgd or
    momentum), and one steady-state cycle of CONTRIB frames (see the module docstring)."""
    import numpy as np

    from innet import wire
    from innet.switch.pipeline import KeySpec, Pipeline

    program = REPO / "p4" / "innet.p4"
    pl = _load(program, {"INNET_K": str(k)})
    switch = wire.Endpoint("02:00:00:00:01:00", "10.0.0.254", wire.UDP_PORT)
    ends = [wire.Endpoint(f"02:00:00:00:00:{w + 1:02x}", f"10.0.0.{w + 1}", 20000 + w) for w in range(workers)]
    job, grp = 1, 1
    pl.table_set_default("switch_addr", "set_switch_addr",
                         {"mac": int(switch.mac.replace(":", ""), 16),
                          "ip": int.from_bytes(wire.ip_bytes(switch.ip), "big")})
    pl.table_insert("innet_jobs", [KeySpec(job)], "set_job", {
        "mode": int(wire.Mode[mode.upper()]), "num_workers": workers, "mcast_grp": grp,
        "slot_base": 0, "slot_count": slots, "param_base": 0, "param_chunks": slots,
        # lr = 0.01 and beta = 0.9 in 2^-16 fixed point (typical controller settings)
        "lr": 655, "lr_shift": 16, "beta": 58982, "beta_shift": 16, "epoch": 0})
    for w, e in enumerate(ends):
        pl.table_insert("innet_workers", [KeySpec(job), KeySpec(w)], "set_worker", {
            "mac": int(e.mac.replace(":", ""), 16), "ip": int.from_bytes(wire.ip_bytes(e.ip), "big"),
            "udp_port": e.port})
    pl.mc_set_group(grp, [(w, w + 1) for w in range(workers)])
    rng = np.random.default_rng(seed)
    pkts = []
    for ver in (0, 1):
        for s in range(slots):
            for w, e in enumerate(ends):
                values = rng.integers(-(1 << 20), 1 << 20, size=k, dtype=np.int32)
                msg = wire.Message(wire.MsgType.CONTRIB, job=job, worker=w, slot=s, chunk=s,
                                   flags=ver, values=values)
                pkts.append((w + 1, wire.frame(e, switch, wire.pack(msg, k))))
    outs = [len(pl.process(port, data)) for port, data in pkts]
    if outs.count(workers) != len(pkts) // workers or sum(outs) != len(pkts):
        raise RuntimeError(f"innet_{mode}: expected one {workers}-way multicast per {workers} packets, "
                           f"got output counts {sorted(set(outs))}")
    return Workload(f"innet_{mode}", program, pl, pkts,
                    f"{len(pkts)} CONTRIBs: {workers} workers x {slots} slots x 2 copies, K={k}", k)


def _load(path: Path, defines: dict[str, str | None] | None = None) -> Any:
    from innet.switch.frontend import compile_file
    from innet.switch.native.select import load_pipeline

    return load_pipeline(compile_file(str(path), defines=defines), EXECUTOR)


def load_workload(name: str) -> Workload:
    if name.endswith("_k1024"):
        return load_innet(name.removeprefix("innet_").removesuffix("_k1024"), k=1024)
    if name.startswith("innet_"):
        return load_innet(name.removeprefix("innet_"))
    return load_example(name)


def run(seconds: float, names: list[str] | None = None, rounds: int = 1) -> tuple[list[ExecutorRow], bool]:
    """One row per workload (``names``, default all) and whether Ctrl-C ended the run early."""
    return measure_each("bench pipeline", names or list(TARGETS), lambda name: measure_workload(name, seconds, rounds))


def measure_workload(name: str, seconds: float, rounds: int = 1) -> ExecutorRow:
    """The row of one workload: packets per second and per CPU-second, medians of ``rounds``."""
    wl = load_workload(name)
    if not wl.packets:
        raise RuntimeError(f"{name}: no benchmark packet produces output")
    native = getattr(wl.pipeline, "executor", "python") == "native"
    rates, cpu_rates, alone, n = [], [], [], 0
    for _ in range(rounds):
        rate, cpu_rate, k = measure(wl.pipeline, wl.packets, seconds)
        rates.append(rate)
        cpu_rates.append(cpu_rate)
        n += k
        if native:
            alone.append(measure_executor(wl.pipeline, wl.packets, seconds))
    rate, cpu_rate = statistics.median(rates), statistics.median(cpu_rates)
    target = (NATIVE_TARGETS if native else TARGETS).get(name, 0)
    elements = wl.values_per_packet
    element_target = ELEMENT_TARGETS.get(name, 0) if native else 0
    alone_rate = statistics.median(alone) if alone else 0.0
    return ExecutorRow(
        workload=name, program=str(wl.program.relative_to(REPO)), packets_used=wl.what,
        bytes_per_packet=len(wl.packets[0][1]), pkt_per_s=round(rate), pkt_per_cpu_s=round(cpu_rate),
        values_per_s=round(rate * elements), values_per_packet=elements, packets=n, rounds=rounds,
        round_pkt_per_cpu_s=tuple(round(r) for r in cpu_rates), elements_per_cpu_s=round(cpu_rate * elements),
        executor_alone_pkt_per_cpu_s=round(alone_rate) if alone else None,
        round_executor_alone_pkt_per_cpu_s=tuple(round(r) for r in alone),
        executor_alone_elements_per_cpu_s=round(alone_rate * elements) if alone else None,
        batch_packets=len(_batch(wl.packets)), executor=getattr(wl.pipeline, "executor", "python"),
        target_pkt_per_s=target, meets_target=rate >= target, meets_target_cpu=cpu_rate >= target,
        target_elements_per_cpu_s=element_target,
        meets_element_target=alone_rate * elements >= element_target if element_target else None)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of ``innet bench pipeline``."""
    ap.add_argument("--seconds", type=positive_float, default=3.0, help="measurement time per workload (default 3)")
    add_out(ap)
    ap.add_argument("--only", action="append", choices=list(TARGETS), help="run only this workload (repeatable)")
    add_executor(ap, what="packet executor (native runs batched)")
    ap.add_argument("--rounds", type=int, default=1, help="measurements per workload, median reported (1..20)")


def command(args: argparse.Namespace) -> int:
    """``innet bench pipeline``: every workload measured, table, JSON and plot."""
    random.seed(0)
    if not 1 <= args.rounds <= 20:
        print(f"innet bench pipeline: --rounds {args.rounds}: must be within 1..20", file=sys.stderr)
        return 2
    global EXECUTOR
    EXECUTOR = args.executor
    rows, partial = run(args.seconds, args.only, args.rounds)
    machine = {**describe().to_json(), "cores_used": 1,
               "backend": f"innet embedded pipeline ({args.executor} executor)",
               "executors": sorted({r.executor for r in rows})}
    from rich.table import Table

    executors = "/".join(str(e) for e in machine["executors"])  # type: ignore[attr-defined]
    table = Table(title=f"innet pipeline throughput, {executors} executor, one core ({machine['cpu']}, Python {machine['python']}, "
                        f"load {machine['load_average']})")
    for col in ("workload", "bytes/pkt", "pkt/s", "pkt/CPU-s", "spread", "values/s", "elem/CPU-s",
                "alone pkt/CPU-s", "alone elem/CPU-s", "target", "ok (CPU)"):
        table.add_column(col, justify="left" if col == "workload" else "right", no_wrap=True)
    for r in rows:
        spread = r.round_pkt_per_cpu_s
        alone = r.executor_alone_pkt_per_cpu_s
        ok = r.meets_element_target if r.meets_element_target is not None else r.meets_target_cpu
        target = (f"{r.target_elements_per_cpu_s / 1e9:g} G elem" if r.target_elements_per_cpu_s
                  else f"{r.target_pkt_per_s:,}")
        alone_elements = r.executor_alone_elements_per_cpu_s
        table.add_row(r.workload, str(r.bytes_per_packet), f"{r.pkt_per_s:,}", f"{r.pkt_per_cpu_s:,}",
                      f"{min(spread):,}-{max(spread):,}" if len(spread) > 1 else "-",
                      f"{r.values_per_s:,}" if r.values_per_packet else "-",
                      f"{r.elements_per_cpu_s / 1e9:.3f} G" if r.values_per_packet else "-",
                      f"{alone:,}" if alone else "-",
                      f"{alone_elements / 1e9:.3f} G" if alone_elements and r.values_per_packet else "-",
                      target, "yes" if ok else "NO")
    console = new_console()  # piped: room for every column
    console.print(table)
    for r in rows:
        console.print(f"  {r.workload}: {r.program}, {r.packets_used}")
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / "bench_pipeline.json"
    out.write_text(json.dumps({"machine": machine, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                               "seconds": args.seconds, "results": [r.to_json() for r in rows],
                               "partial": partial}, indent=2))
    print(f"saved {out}")
    try:
        from innet.testbed.core.report import pyplot

        plt = pyplot()

        fig, ax = plt.subplots(figsize=(6, 3))
        names = [r.workload for r in rows]
        x = list(range(len(rows)))
        ax.bar([i - 0.2 for i in x], [r.pkt_per_s for r in rows], width=0.4, color="tab:blue", label="pkt/s (wall)")
        ax.bar([i + 0.2 for i in x], [r.pkt_per_cpu_s for r in rows], width=0.4, color="tab:green",
               label="pkt/CPU-s")
        ax.scatter(x, [r.target_pkt_per_s for r in rows], color="red", marker="_", s=400, label="target")
        ax.set_xticks(x, names, fontsize=7)
        ax.set_ylabel("packets/s (one core)")
        ax.set_title(f"innet pipeline, {str(machine['cpu'])[:40]}", fontsize=8)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.out / "bench_pipeline.png", dpi=120)
        print(f"saved {args.out / 'bench_pipeline.png'}")
    except ImportError:
        pass
    return interrupted_partial("innet bench pipeline", out) if partial else 0
