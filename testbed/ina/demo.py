"""``innet demo``: the star testbed, training with the switch as optimizer, and a small INA vs gloo table.

1. Bring up a star of 4 workers: Mininet when root (1 Gbit/s TCLinks, ``InnetSwitchNode``),
   else loopback (``innet-switch`` UDP ports); the message says which.
2. Replace the default job by a momentum job holding the softmax-regression parameters
   (loaded by the controller); each worker process (in its host) pushes gradients of its
   digits minibatches and pulls the parameters the switch computed; rich progress bars.
   Checks: every worker ends with the same int32 parameters, equal to the switch's
   registers (read back over P4Runtime) and bit-exact with the numpy model of the
   switch's arithmetic; prints test accuracy next to the float32 reference.
3. Back to a sum job: allreduce of one or two sizes, innet vs gloo on the same testbed.
4. Writes ``demo-<stamp>.json``, ``demo-<stamp>-train.png`` and ``demo-<stamp>-bench.png``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from innet.argtypes import Reporter, brought_up
from innet.testbed.ina import bench
from innet.testbed.core.testbed import Testbed, TestbedError
from innet.testbed.core.bounds import LinkModel
from innet.testbed.ina.records import DemoResult, PartialDemo, PartialTraining, RunInfo, TrainingResult
from innet.testbed.ina.train_worker import WORKER_MODULE, TrainPlan
from innet.testbed.backends.select import resolve_backend


@dataclass(frozen=True)
class DemoConfig:
    """Settings of the demo."""

    workers: int = 4
    """Workers in the star."""
    steps: int = 150
    """Training steps (each: every worker pushes its gradient, pulls parameters)."""
    mode: str = "momentum"
    """Switch optimizer: ``sgd`` or ``momentum``."""
    lr: float = 0.5
    beta: float = 0.9
    bench_sizes: tuple[int, ...] = (16384, 262144)
    """Allreduce sizes of the small benchmark (elements)."""
    bench_repeats: int = 2
    gloo: bool = True
    """Run gloo in the benchmark (needs torch)."""
    backend: str = "auto"
    """``auto`` (Mininet when root), ``mininet`` or ``loopback``."""
    bw_mbps: float = 1000.0
    """Link rate in Mininet."""
    executor: str = "auto"
    """The switch's packet executor (``innet-switch --executor``)."""
    switch_impl: str = "innet"
    """The switch: ``innet`` or ``bmv2`` (simple_switch_grpc in Mininet; ``TestbedOptions.switch_impl``)."""
    out_dir: Path = Path("results")
    benchmark: bool = True
    """Run the allreduce benchmark after training (``innet demo``); False for ``innet train``."""


class TrainingInterrupted(Exception):
    """Ctrl-C during training; carries the per-worker losses of the steps done (NaN after)."""

    def __init__(self, losses: Any) -> None:
        super().__init__("training interrupted")
        self.losses = losses


def _partial(config: DemoConfig, backend: str, losses: Any, started: float) -> PartialDemo:
    """The result of an interrupted run: the steps every worker finished and their mean loss."""
    done = [int(np.sum(~np.isnan(row))) for row in losses]
    curve = np.nanmean(losses[:, :min(done)], axis=0) if min(done) else np.zeros(0)
    prefix = "demo" if config.benchmark else "train"
    date = dt.datetime.now().isoformat(timespec="seconds")
    training = PartialTraining(steps=config.steps, workers=config.workers, mode=config.mode, lr=config.lr,
                               steps_done_per_worker=tuple(done), loss_curve=tuple(float(x) for x in curve))
    result = PartialDemo(date=date, machine=bench.machine(), backend=backend, training=training,
                         seconds=time.perf_counter() - started)
    config.out_dir.mkdir(parents=True, exist_ok=True)
    path = config.out_dir / f"{prefix}-{date.replace(':', '').replace('-', '')}-partial.json"
    path.write_text(json.dumps(result.to_json(), indent=2) + "\n")
    return replace(result, files=(str(path),))


def _train(tb: Testbed, config: DemoConfig, console: Any) -> TrainingResult:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from innet.host.training.model import SoftmaxRegression, load_digits_dataset
    from innet.host.training.loop import float_training, initial_params, simulate_training

    model = SoftmaxRegression()
    k = tb.options.k
    base = TrainPlan(job=tb.options.job_id, rank=0, num_workers=config.workers, window=tb.options.window, k=k,
                     transport=None, epoch=1, mode=config.mode, lr=config.lr, beta=config.beta, steps=config.steps)
    train_config = base.train_config()
    job = tb.replace_job(mode=config.mode, lr=config.lr, beta=config.beta if config.mode == "momentum" else 0.0,
                         grad_frac_bits=base.grad_frac_bits, param_frac_bits=base.param_frac_bits,
                         param_chunks=math.ceil(model.size / k))
    base = replace(base, epoch=tb.controller.attach(job.job_id))
    start_params = initial_params(train_config, model)
    tb.controller.load_params(job, start_params)
    console.print(f"job {job.job_id}: {config.mode} on the switch, lr {config.lr}, "
                  f"{model.size} parameters in {math.ceil(model.size / k)} chunks of K={k}; "
                  f"{config.workers} workers x {config.steps} steps")
    procs = []
    for h in tb.topology.workers:
        rank = h.rank or 0
        plan = replace(base, rank=rank, transport=tb.transport(rank))
        name = f"train-{h.name}"
        procs.append((name, tb.spawn_on(h.name, name, [sys.executable, "-m", WORKER_MODULE, plan.to_json()],
                                        stdout_pipe=True)))
    losses = np.full((config.workers, config.steps), np.nan)
    finals: dict[int, list[int]] = {}
    seconds: dict[int, float] = {}
    start = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("loss {task.fields[loss]}"), TimeElapsedColumn(), console=console) as progress:
        tasks = [progress.add_task(f"worker {r} ({h.name})", total=config.steps, loss="-")
                 for r, h in enumerate(tb.topology.workers)]

        def follow(rank: int, popen: Any) -> None:
            for line in popen.stdout:
                d = json.loads(line)
                if "step" in d:
                    losses[rank, d["step"]] = d["loss"]
                    progress.update(tasks[rank], completed=d["step"] + 1, loss=f"{d['loss']:.3f}")
                elif "final" in d:
                    finals[rank], seconds[rank] = d["final"], d["seconds"]

        threads = [threading.Thread(target=follow, args=(r, p), daemon=True) for r, (_, p) in enumerate(procs)]
        for t in threads:
            t.start()
        for (name, popen), t in zip(procs, threads):
            try:
                popen.wait(timeout=600)
            except KeyboardInterrupt:
                raise TrainingInterrupted(losses) from None
            except Exception:
                raise TestbedError(f"training: {name} did not finish; log:\n{tb.procs.log_tail(name)}") from None
            t.join(timeout=10)
            if popen.returncode != 0:
                raise TestbedError(f"training: {name} exited with {popen.returncode}; log:\n"
                                   f"{tb.procs.log_tail(name)}")
    wall = time.perf_counter() - start
    for name, _ in procs:
        tb.procs.forget(name)
    if len(finals) != config.workers:
        raise TestbedError(f"training: only ranks {sorted(finals)} reported final parameters")
    final = np.array(finals[0], dtype=np.int32)
    agree = all(np.array_equal(np.array(finals[r], dtype=np.int32), final) for r in finals)
    on_switch = np.asarray(tb.controller.read_params(job, as_float=False, size=model.size))
    data = load_digits_dataset(seed=base.seed)
    simulated = simulate_training(data, train_config, model)
    reference = float_training(data, train_config, model)
    params = train_config.fixed.params_float(final)
    return TrainingResult(
        steps=config.steps, workers=config.workers, mode=config.mode, lr=config.lr,
        seconds=wall, steps_per_s=config.steps / max(seconds.values()),
        accuracy=model.accuracy(params, data.x_test, data.y_test),
        float_reference_accuracy=reference.accuracy,
        workers_agree=agree, switch_registers_match=bool(np.array_equal(on_switch, final)),
        bit_exact_with_model=bool(simulated.params_int is not None and np.array_equal(simulated.params_int, final)),
        loss_curve=tuple(float(x) for x in np.nanmean(losses, axis=0)),
        float_reference_loss=tuple(reference.losses))


def _train_plot(train: TrainingResult, caption: str, path: Path) -> Path:
    from innet.testbed.core.report import pyplot

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(train.loss_curve, label=f"innet switch optimizer ({train.mode}), acc {train.accuracy:.3f}")
    ax.plot(train.float_reference_loss, "--", alpha=0.7,
            label=f"float32 reference, acc {train.float_reference_accuracy:.3f}")
    ax.set_xlabel("step")
    ax.set_ylabel("mean training loss over workers")
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title("Softmax regression on digits, parameters updated by the switch\n" + bench.wrap_caption(caption, 110), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run(config: DemoConfig, console: Any) -> DemoResult | PartialDemo:
    """The whole demo, also written as JSON. Ctrl-C during training: the testbed torn down,
    a :class:`PartialDemo` of the steps done."""
    backend = resolve_backend(config.backend)
    why = ("running as root: Mininet hosts in network namespaces, 1 Gbit/s TCLinks"
           if backend == "mininet" else ("not root: " if config.backend == "auto" else "")
           + "loopback, innet-switch UDP ports on 127.0.0.1, no link shaping")
    command = "innet demo" if config.benchmark else "innet train"
    console.print(f"[bold]{command}[/]: star of {config.workers} workers on [bold]{backend}[/] ({why})")
    gloo = config.gloo and _torch_available()
    if config.gloo and not gloo:
        console.print("[yellow]torch is not installed: the benchmark runs innet only (setup.sh installs torch)[/]")
    bench_config = bench.BenchConfig(workers=(config.workers,), sizes=config.bench_sizes,
                                     repeats=config.bench_repeats, collectives=("ina", "gloo") if gloo else ("ina",),
                                     backend=backend, bw_mbps=config.bw_mbps, out_dir=config.out_dir,
                                     executor=config.executor, switch_impls=(config.switch_impl,))
    started = time.perf_counter()
    try:
        return _run_on_testbed(config, console, backend, bench_config, gloo, started)
    except TrainingInterrupted as stop:  # the testbed is down (its with ended): keep what was trained
        return _partial(config, backend, stop.losses, started)


def _run_on_testbed(config: DemoConfig, console: Any, backend: str, bench_config: bench.BenchConfig, gloo: bool,
                    started: float) -> DemoResult:
    up = Reporter(console, f"bringing up a star of {config.workers} workers on {backend}")
    with brought_up(bench.open_testbed(backend, config.workers, 0.0, bench_config, fixed_ports=True), up) as tb:
        for note in tb.port_notes:
            console.print(note, markup=False, highlight=False)
        console.print(f"up in {time.perf_counter() - started:.1f} s: switch {tb.topology.switch().name} "
                      f"(P4Runtime {tb.grpc_address}), innet.p4 pushed, forwarding and job installed")
        train = _train(tb, config, console)
        console.print(f"trained {train.steps} steps in {train.seconds:.1f} s "
                      f"({train.steps_per_s:.0f} steps/s): test accuracy [bold]{train.accuracy:.3f}[/] "
                      f"(float32 reference {train.float_reference_accuracy:.3f}); workers agree: "
                      f"{_yes(train.workers_agree)}, switch registers match: {_yes(train.switch_registers_match)}, "
                      f"bit-exact with the numpy switch model: {_yes(train.bit_exact_with_model)}")
        rows: list[bench.Row] = []
        if config.benchmark:
            tb.replace_job(mode="sum")
            link = LinkModel(bw_bps=config.bw_mbps * 1e6 if backend == "mininet" else None)
            console.print(f"benchmark: allreduce of {', '.join(map(str, config.bench_sizes))} float32 elements")
            per_rank = tb.run_ina(config.bench_sizes, config.bench_repeats)
            rows += bench.summarize("ina", config.workers, 0.0, per_rank, tb.options.k, link, config.switch_impl)
            if gloo:
                per_rank = tb.run_gloo(config.bench_sizes, config.bench_repeats)
                rows += bench.summarize("gloo", config.workers, 0.0, per_rank, tb.options.k, link, config.switch_impl)
    result = DemoResult(RunInfo.now(bench_config, backend), train, tuple(rows), time.perf_counter() - started)
    doc = result.to_json()
    if rows:
        console.print(bench.table(doc))
    config.out_dir.mkdir(parents=True, exist_ok=True)
    prefix = "demo" if config.benchmark else "train"
    stamp = result.info.date.replace(":", "").replace("-", "")
    json_path = config.out_dir / f"{prefix}-{stamp}.json"
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    pngs = [_train_plot(train, bench.caption(doc), config.out_dir / f"{prefix}-{stamp}-train.png")]
    if rows:
        pngs.append(bench.plot(doc, config.out_dir / f"demo-{stamp}-bench.png"))
    console.print(f"wrote {json_path}, {', '.join(map(str, pngs))}; testbed down, nothing left "
                  f"({time.perf_counter() - started:.0f} s in all)")
    return replace(result, files=(str(json_path), *map(str, pngs)))


def _yes(flag: bool) -> str:
    return "[green]yes[/]" if flag else "[red]NO[/]"


def _torch_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None
