"""``innet demo --topo rail-only|rail-optimized``: a rail network training with its switches as the optimizer.

1. Bring up the topology (Mininet when root, NIC 10 Mbit/s and HB 100 Mbit/s; else loopback).
2. Trains a real model (softmax regression on the digits, :mod:`innet.testbed.rail.digits`)
   with the hierarchical step: every GPU pushes its quantized gradient, the HB domains
   reduce-scatter, each rail switch sums its shard across domains and applies the momentum
   step to the parameters it holds, the HB domains all-gather. Checks: every GPU ends with the
   same parameters, equal to the switches' registers and bit-exact with the sharded numpy
   model; reports the test accuracy next to float32 training's.
3. Hierarchical allreduce (and, on rail-optimized, flat INA through the spine) of a few sizes,
   exact integers checked on every GPU; then the all-to-all with its model.
4. Writes ``rail-demo-<kind>-<stamp>.json``.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from innet.argtypes import Reporter, brought_up
from innet.testbed.core.report import save_json
from innet.testbed.core.testbed import TestbedOptions, WorkerResult
from innet.testbed.rail import digits as rail_digits
from innet.testbed.rail.models import railperf
from innet.testbed.rail.grid import shard_bounds
from innet.testbed.rail.records import DemoRow, TrainingSummary
from innet.testbed.core.topology import TOPOLOGIES, Link
from innet.testbed.backends.select import resolve_backend

if TYPE_CHECKING:
    from innet.testbed.rail.testbed import RailTestbed


@dataclass(frozen=True)
class RailDemoConfig:
    topo: str = "rail-only"
    domains: int = 2
    gpus_per_domain: int = 4
    steps: int = 30
    """Digits training steps."""
    sizes: tuple[int, ...] = (1000, 16384)
    pair_bytes: int = 50000
    nic_mbps: float = 10.0
    hb_mbps: float = 100.0
    backend: str = "auto"
    switch_impl: str = "innet"
    """Every P4 switch: ``innet`` (innet-switch) or ``bmv2`` (simple_switch_grpc, Mininet only)."""
    out_dir: Path = Path("results")
    benchmark: bool = True
    """Run the collectives after training (``innet demo``); False for ``innet train``."""


def run(config: RailDemoConfig, console: Any) -> dict[str, Any]:
    """The demo (or ``innet train``): the result document, also written as JSON. Ctrl-C: the
    testbed torn down, a document of the stage reached and what finished before it, with
    ``"partial": True`` and its path under ``"file"``."""
    reached: dict[str, Any] = {"stage": "bring-up"}
    try:
        return _run(config, console, reached)
    except KeyboardInterrupt:
        doc = {"partial": True, "config": {**asdict(config), "out_dir": str(config.out_dir)}, **reached}
        path = save_json(config.out_dir, f"rail-{'demo' if config.benchmark else 'train'}-{config.topo}-partial", doc)
        return {**doc, "file": str(path)}


def _run(config: RailDemoConfig, console: Any, reached: dict[str, Any]) -> dict[str, Any]:
    """The whole run; ``reached`` says the stage and holds the training summary once done."""
    from rich.table import Table

    from innet.testbed.rail import workloads
    from innet.testbed.rail.testbed import RailTestbed

    backend = resolve_backend(config.backend)
    topo = TOPOLOGIES[config.topo](domains=config.domains, gpus_per_domain=config.gpus_per_domain,
                                   nic_link=Link(bw_mbps=config.nic_mbps), hb_link=Link(bw_mbps=config.hb_mbps))
    kind = "BMv2 (simple_switch_grpc)" if config.switch_impl == "bmv2" else "innet"
    console.print(f"[bold]{'innet demo' if config.benchmark else 'innet train'}[/]: {topo.name} on [bold]{backend}[/] "
                  f"({len(topo.p4_switches)} {kind} switches, {config.domains} HB domains of {config.gpus_per_domain})")
    grid = railperf.Grid(config.gpus_per_domain, config.domains, config.nic_mbps * 1e6, config.hb_mbps * 1e6)
    options = TestbedOptions(window=8, switch_impl=config.switch_impl, fixed_ports=True)
    tb = RailTestbed(topo, options, backend=backend)
    with brought_up(tb, Reporter(console, f"bringing up {len(topo.p4_switches)} switches on {backend}")):
        for note in tb.port_notes:
            console.print(note, markup=False, highlight=False)
        addresses = ", ".join(f"{name} {address}" for name, address in sorted(tb.grpc_addresses.items()))
        console.print(f"up: P4Runtime {addresses}; training {config.steps} steps", markup=False, highlight=False)
        reached["stage"] = "training"
        digits = rail_digits.DigitsConfig(gpus=config.gpus_per_domain * config.domains, steps=config.steps)
        started = time.perf_counter()
        out = workloads.digits(tb, digits)
        seconds = time.perf_counter() - started
        initial = out.initial
        expect = rail_digits.simulate(digits, initial, shard_bounds(initial.size, tb.options.k, tb.grid.x),
                                      [out.jobs[rail] for rail in tb.grid.rails])
        finals = list(out.finals.values())
        losses = rail_digits.mean_losses(out.lines, digits.steps)
        train = TrainingSummary(
            model="softmax regression, digits", mode=digits.mode, lr=digits.lr, beta=digits.beta,
            steps=digits.steps, gpus=digits.gpus, parameters=int(initial.size), seconds=seconds,
            shards={rail: out.jobs[rail].param_chunks for rail in tb.grid.rails},
            accuracy=rail_digits.accuracy(digits, finals[0]),
            float_reference_accuracy=rail_digits.float_accuracy(digits), loss_first=losses[0], loss_last=losses[-1],
            workers_agree=all(np.array_equal(f, finals[0]) for f in finals),
            switch_registers_match=bool(np.array_equal(out.registers, finals[0])),
            bit_exact_with_model=bool(np.array_equal(expect, finals[0])))
        console.print(f"digits (softmax regression), {digits.mode} on the rail switches, {digits.steps} hierarchical "
                      f"steps over {digits.gpus} GPUs in {seconds:.1f} s, {initial.size} parameters sharded over "
                      f"{len(tb.grid.rails)} rails: loss {losses[0]:.3f} -> {losses[-1]:.3f}, test accuracy "
                      f"[bold]{train.accuracy:.3f}[/] (float32 reference {train.float_reference_accuracy:.3f}); "
                      f"workers agree {train.workers_agree}, switch registers match "
                      f"{train.switch_registers_match}, bit-exact with the numpy model {train.bit_exact_with_model}")
        reached.update(stage="collectives", training=train.to_json())
        rows = _collectives(tb, config, grid, backend) if config.benchmark else []
    table = Table(title=f"{topo.name} ({backend})")
    for col in ("collective", "size", "median (ms)", "exact"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r.collective, str(r.size), f"{r.median_s * 1e3:.1f}", "yes" if r.ok else "NO")
    if rows:
        console.print(table)
    doc = {"topology": topo.name, "backend": backend, "switch_impl": config.switch_impl,
           "config": {**asdict(config), "out_dir": str(config.out_dir)}, "training": train.to_json(),
           "rows": [r.to_json() for r in rows]}
    name = f"rail-{'demo' if config.benchmark else 'train'}-{config.topo}"
    console.print(f"wrote {save_json(config.out_dir, name, doc)}")
    return doc


def _collectives(tb: RailTestbed, config: RailDemoConfig, grid: railperf.Grid, backend: str) -> list[DemoRow]:
    """After training: the ``sum`` job again, hierarchical (and flat) INA of ``config.sizes``
    and the all-to-all, two timed runs each."""
    from innet.testbed.rail import workloads

    tb.replace_job()
    runs = [("hierarchical INA", workloads.hierarchical)] + ([("flat INA (spine)", workloads.flat)]
                                                             if tb.grid.spine is not None else [])
    rows = []
    for label, fn in runs:
        res = fn(tb, list(config.sizes), repeats=2)
        rows += [DemoRow(label, s, _median(res, i), all(r[i].ok for r in res)) for i, s in enumerate(config.sizes)]
    res = workloads.alltoall(tb, config.pair_bytes, repeats=2)
    route = "direct" if tb.grid.spine is not None else "two-step"
    model = (railperf.alltoall_rail_optimized if route == "direct" else railperf.alltoall_rail_only)(
        grid, config.pair_bytes)
    rows.append(DemoRow(f"all-to-all ({route})", config.pair_bytes, _median(res, 0), all(r[0].ok for r in res),
                        model if backend == "mininet" else None, modelled=True))
    return rows


def _median(per_rank: list[list[WorkerResult]], index: int) -> float:
    from innet.testbed.rail.workloads import slowest_times

    return statistics.median(slowest_times(per_rank, index))
