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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from innet.argtypes import Reporter, brought_up
from innet.testbed.core.report import save_json
from innet.testbed.core.testbed import TestbedOptions, WorkerResult
from innet.testbed.rail import digits as rail_digits
from innet.testbed.rail.models import railperf
from innet.testbed.rail.grid import shard_bounds
from innet.testbed.rail.records import DemoRow, TrainingSummary, config_json
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


@dataclass(frozen=True)
class RailDemoResult:
    """One ``innet demo``/``innet train`` on a rail topology: the training and the collectives."""

    topology: str
    backend: str
    switch_impl: str
    config: RailDemoConfig
    training: TrainingSummary
    rows: tuple[DemoRow, ...]
    """Empty for ``innet train``."""

    @property
    def good(self) -> bool:
        """Every GPU ended with the switches' and the numpy model's parameters, the accuracy
        is within 3 points of float32 training's, and every collective was exact."""
        t = self.training
        return (t.workers_agree and t.switch_registers_match and t.bit_exact_with_model
                and t.accuracy >= t.float_reference_accuracy - 0.03 and all(r.ok for r in self.rows))

    def to_json(self) -> dict[str, Any]:
        return {"topology": self.topology, "backend": self.backend, "switch_impl": self.switch_impl,
                "config": config_json(self.config), "training": self.training.to_json(),
                "rows": [r.to_json() for r in self.rows]}


@dataclass(frozen=True)
class PartialRailDemo:
    """A rail demo or training stopped by Ctrl-C: the stage it reached and the training once done."""

    config: RailDemoConfig
    stage: str
    """``bring-up``, ``training`` or ``collectives``."""
    training: TrainingSummary | None = None
    file: str | None = None
    """Where the document was written (absent from the document itself, written before)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"partial": True, "config": config_json(self.config), "stage": self.stage}
        if self.training is not None:
            out["training"] = self.training.to_json()
        return out


def run(config: RailDemoConfig, console: Any) -> RailDemoResult | PartialRailDemo:
    """The demo (or ``innet train``), its document also written as JSON. Ctrl-C: the
    testbed torn down, the stage reached and what finished before it, written and returned
    with the path it was written to."""
    reached = _Reached()
    try:
        return _run(config, console, reached)
    except KeyboardInterrupt:
        partial = PartialRailDemo(config, reached.stage, reached.training)
        path = save_json(config.out_dir, f"rail-{'demo' if config.benchmark else 'train'}-{config.topo}-partial",
                         partial.to_json())
        return replace(partial, file=str(path))


@dataclass
class _Reached:
    """The stage a run is in and its training summary once done, kept for a Ctrl-C."""

    stage: str = "bring-up"
    training: TrainingSummary | None = None


def _run(config: RailDemoConfig, console: Any, reached: _Reached) -> RailDemoResult:
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
        reached.stage = "training"
        digits = rail_digits.DigitsConfig(gpus=config.gpus_per_domain * config.domains, steps=config.steps)
        started = time.perf_counter()
        out = workloads.digits(tb, digits)
        seconds = time.perf_counter() - started
        initial = out.initial
        expect = rail_digits.simulate(digits, initial, shard_bounds(initial.size, tb.options.k, tb.grid.x),
                                      [out.jobs[rail] for rail in tb.grid.rails])
        finals = list(out.finals.values())
        losses = rail_digits.mean_losses({rank: g.steps for rank, g in out.lines.items()}, digits.steps)
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
        reached.stage, reached.training = "collectives", train
        rows = _collectives(tb, config, grid, backend) if config.benchmark else []
    table = Table(title=f"{topo.name} ({backend})")
    for col in ("collective", "size", "median (ms)", "exact"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r.collective, str(r.size), f"{r.median_s * 1e3:.1f}", "yes" if r.ok else "NO")
    if rows:
        console.print(table)
    result = RailDemoResult(topo.name, backend, config.switch_impl, config, train, tuple(rows))
    name = f"rail-{'demo' if config.benchmark else 'train'}-{config.topo}"
    console.print(f"wrote {save_json(config.out_dir, name, result.to_json())}")
    return result


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
