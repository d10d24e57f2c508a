"""``innet demo --mode luwu``: LuWu model-in-network training of an MLP on digits.

Brings up a star of N workers plus S optimizer nodes (Mininet when root, else loopback),
trains with ``ModelInNetwork`` (layer-wise push/pull, Adam on the nodes' out-of-core state),
then the same model with DDP + the innet hook and the one-process torch Adam reference;
prints the loss curves side by side, the accuracies, worker memory, and the optimizer
nodes' state (what ``innet inspect --optimizer DIR`` shows). Writes ``demo-luwu-<stamp>.json``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


from innet.testbed.luwu import status as luwu_status
from innet.testbed.luwu.records import DemoCurves, LuwuDemoResult, PartialLuwuDemo, TrainerFinal
from innet.testbed.luwu.run import RunConfig, run_training
from innet.testbed.luwu.train import TrainSpec, run as train
from innet.testbed.backends.bmv2 import LUWU_K
from innet.testbed.backends.select import open_testbed, resolve_backend
from innet.testbed.core.machine import describe, switch_description
from innet.testbed.core.testbed import options_for
from innet.testbed.core.topology import star


@dataclass(frozen=True)
class LuwuDemoConfig:
    workers: int = 2
    nodes: int = 2
    steps: int = 40
    lr: float = 0.01
    backend: str = "auto"
    out_dir: Path = Path("results")
    switch_impl: str = "innet"
    """``innet`` or ``bmv2`` (simple_switch_grpc in Mininet; ``TestbedOptions.switch_impl``)."""
    command: str = "innet demo"
    """The command that runs it (``innet demo`` or ``innet train``), named in what it prints."""


@dataclass
class _Reached:
    """How far the demo got: the stage running and the loss curves of the runs done."""

    stage: str = "local reference"
    loss: dict[str, list[float]] = field(default_factory=dict)


def run(config: LuwuDemoConfig, console: Any) -> LuwuDemoResult | PartialLuwuDemo:
    """The demo (or ``innet train --mode luwu``), also written as JSON. Ctrl-C: the testbed
    torn down, the stage reached and the losses of the runs that finished, written too."""
    reached = _Reached()
    try:
        return _run(config, console, reached)
    except KeyboardInterrupt:
        config.out_dir.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now().isoformat(timespec="seconds").replace(":", "").replace("-", "")
        path = config.out_dir / f"demo-luwu-{stamp}-partial.json"
        partial = PartialLuwuDemo(_settings(config), reached.stage, reached.loss, str(path))
        path.write_text(json.dumps(partial.to_json(), indent=1) + "\n")
        return partial


def _settings(config: LuwuDemoConfig) -> dict[str, str]:
    return {k: str(v) for k, v in asdict(config).items()}


def _run(config: LuwuDemoConfig, console: Any, reached: _Reached) -> LuwuDemoResult:
    """The whole demo; ``reached`` says the stage and holds the losses of the runs done."""
    backend = resolve_backend(config.backend)
    console.print(f"[bold]{config.command} --mode luwu[/]: {config.workers} workers + {config.nodes} optimizer nodes "
                  f"on [bold]{backend}[/]")
    reference: list[dict[str, Any]] = []
    train(TrainSpec(mode="local", world=config.workers, steps=config.steps, lr=config.lr), reference.append)
    ref_loss = [d["loss"] for d in reference if "step" in d]
    reached.stage, reached.loss = "bring-up", {"local": ref_loss}
    state_root = Path(tempfile.mkdtemp(prefix="innet-luwu-demo-"))
    topology = star(workers=config.workers + config.nodes)
    k = LUWU_K if config.switch_impl == "bmv2" else None  # else the largest K the links' MTU takes
    started = time.perf_counter()
    options = options_for(topology, k, window=16, switch_impl=config.switch_impl, fixed_ports=True)
    with open_testbed(topology, options, backend) as tb:
        bring_up = time.perf_counter() - started
        for note in tb.port_notes:
            console.print(note, markup=False, highlight=False)
        console.print(f"up: P4Runtime {tb.grpc_address}; LuWu, then DDP+innet, {config.steps} steps each",
                      markup=False, highlight=False)
        reached.stage = "luwu"
        luwu = run_training(tb, RunConfig(mode="luwu", workers=config.workers, nodes=config.nodes,
                                          steps=config.steps, lr=config.lr), state_root)
        reached.stage, reached.loss["luwu"] = "ddp-innet", luwu.mean_loss
        ddp = run_training(tb, RunConfig(mode="ddp-innet", workers=config.workers, steps=config.steps, lr=config.lr))
    for r in (luwu, ddp):
        if r.errors:
            for name, text in r.errors.items():
                console.print(f"[red]{r.mode}: {name} failed[/]: {text}")
    every = max(1, config.steps // 8)
    console.print("step  local-Adam   LuWu   DDP+innet")
    for s in range(0, config.steps, every):
        cells = [f"{c[s]:.4f}" if s < len(c) else "-" for c in (ref_loss, luwu.mean_loss, ddp.mean_loss)]
        console.print(f"{s:4d}  {cells[0]:>10} {cells[1]:>7} {cells[2]:>10}")
    acc = DemoCurves(local=reference[-1]["accuracy"], luwu=luwu.finals[0].accuracy if luwu.finals else None,
                     ddp_innet=ddp.finals[0].accuracy if ddp.finals else None)
    fmt = lambda a: "-" if a is None else f"{a:.3f}"  # noqa: E731
    console.print(f"test accuracy: local {fmt(acc.local)}, LuWu {fmt(acc.luwu)}, DDP+innet {fmt(acc.ddp_innet)}")
    if luwu.finals:
        f = luwu.finals[0]
        console.print(f"LuWu worker: peak parameter bytes {f.tensor_bytes_peak}, between steps "
                      f"{f.tensor_bytes_between_steps}, no optimizer state; DDP+Adam worker: "
                      f"{ddp.finals[0].tensor_bytes_peak if ddp.finals else '-'} tensor bytes")
    step_s = (_median_step(luwu.finals), _median_step(ddp.finals))
    console.print(f"{switch_description('auto', config.switch_impl)}, K={tb.options.k}: bring-up {bring_up:.1f} s; "
                  f"median step LuWu {_fmt_s(step_s[0])}, DDP+innet {_fmt_s(step_s[1])}")
    read = [n for n in luwu.nodes if isinstance(n, luwu_status.NodeStatus)]
    luwu_status.render(read, console)
    console.print(f"(inspect later: innet inspect " + " ".join(f"--optimizer {state_root / n.name}" for n in read) + ")")
    result = LuwuDemoResult(
        date=dt.datetime.now().isoformat(timespec="seconds"), machine=describe(), backend=backend,
        switch=switch_description("auto", config.switch_impl), k=tb.options.k, bring_up_seconds=bring_up,
        median_step_seconds=step_s, settings=_settings(config), accuracy=acc,
        loss=DemoCurves(local=ref_loss, luwu=luwu.mean_loss, ddp_innet=ddp.mean_loss), nodes=tuple(luwu.nodes),
        errors={**luwu.errors, **ddp.errors})
    config.out_dir.mkdir(parents=True, exist_ok=True)
    path = config.out_dir / f"demo-luwu-{result.date.replace(':', '').replace('-', '')}.json"
    path.write_text(json.dumps(result.to_json(), indent=1) + "\n")
    console.print(f"wrote {path}")
    return result


def _median_step(finals: list[TrainerFinal]) -> float | None:
    """Median over the ranks' steps after the first (which includes the agents' start)."""
    times = [t for f in finals for t in f.step_seconds[1:]]
    return float(statistics.median(times)) if times else None


def _fmt_s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"
