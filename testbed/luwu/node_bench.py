"""Optimizer node update throughput: out-of-core Adam/AdamW (``innet.host.luwu.ooc_adam``) on a
file-backed shard larger than its resident budget, against ``torch.optim.Adam``/``AdamW``
(``foreach=True``) on the same machine, in the same run.

    innet bench luwu-node [--params 50000000] [--rss-budget-mib 160] [--out results/]

Every measurement runs in a fresh process (its peak RSS is its own): a setup process writes
the initial shard; the node process reopens it (checksums verified), then runs ``--steps``
timed steps after one warm-up step, each step as ``--pieces`` gradient pieces (the layers
of a model, as they arrive at a node) and a commit (fsync of the new generation and of
``state.json``); the torch process holds parameters, gradients and both moments in memory
and times ``optimizer.step()``. Throughput is parameters per second of the update
(median over steps); the node's commit is reported separately and with it. The node's peak
RSS must stay under the stated budget (checked: exit status 1 when it does not).
Prints a table, writes ``bench_luwu_node.json`` (and a PNG when matplotlib is installed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from innet.argtypes import add_out, interrupted_partial, measure_each
from innet.rss import peak_rss_bytes
from innet.testbed.core.records import JsonRecord
from innet.testbed.luwu.records import NodeBenchRow, NodeRun, TorchRun

MODULE = __name__
TARGET_RATIO = 0.5
"""Node throughput / torch foreach throughput the benchmark is held to."""


def _config(optimizer: str) -> Any:
    from innet.host.luwu.ooc_adam import AdamConfig

    if optimizer == "adamw":
        return AdamConfig(lr=1e-3, weight_decay=0.01, decoupled=True)
    return AdamConfig(lr=1e-3)


@dataclass(frozen=True)
class NodeBenchSpec(JsonRecord):
    """What a measuring process is told (as JSON on its command line)."""

    params: int
    optimizer: str
    """``adam`` or ``adamw``."""
    steps: int
    pieces: int
    block: int
    threads: int
    dir: str
    """The state directory."""


def _setup(spec: NodeBenchSpec) -> float:
    """Write the initial shard (normal values, in blocks) and create the state from it."""
    import numpy as np

    from innet.host.luwu.ooc_adam import AdamState

    directory = Path(spec.dir)
    n = spec.params
    init = directory.parent / "init.npy"
    values = np.lib.format.open_memmap(init, mode="w+", dtype=np.float32, shape=(n,))
    rng = np.random.default_rng(0)
    for a in range(0, n, 1 << 20):
        values[a:a + (1 << 20)] = rng.standard_normal(min(n - a, 1 << 20), dtype=np.float32)
    values.flush()
    del values
    t0 = time.perf_counter()
    AdamState.create(directory, np.load(init, mmap_mode="r"), _config(spec.optimizer), model="bench").close()
    init.unlink()
    return time.perf_counter() - t0


def _node(spec: NodeBenchSpec) -> NodeRun:
    import numpy as np

    from innet.host.luwu.ooc_adam import AdamState

    t0 = time.perf_counter()
    state = AdamState.open(Path(spec.dir), block=spec.block, model="bench", threads=spec.threads)
    open_seconds = time.perf_counter() - t0
    n, pieces = state.size, spec.pieces
    bounds = [(n * i // pieces, n * (i + 1) // pieces) for i in range(pieces)]
    grad = np.random.default_rng(1).standard_normal(max(b - a for a, b in bounds), dtype=np.float32)
    updates, commits = [], []
    for step in range(spec.steps + 1):
        t1 = time.perf_counter()
        for a, b in reversed(bounds):  # backward order, as a node receives the layers
            state.update(a, grad[:b - a])
        t2 = time.perf_counter()
        state.commit_step()
        t3 = time.perf_counter()
        if step:
            updates.append(t2 - t1)
            commits.append(t3 - t2)
    state.close()
    return NodeRun(open_seconds=open_seconds, update_seconds=updates, commit_seconds=commits, native=state.native,
                   peak_rss_bytes=peak_rss_bytes(), working_set_bytes=state.working_set_bytes)


def _torch(spec: NodeBenchSpec) -> TorchRun:
    import torch

    n, pieces = spec.params, spec.pieces
    torch.manual_seed(0)
    sizes = [n * (i + 1) // pieces - n * i // pieces for i in range(pieces)]
    params = [torch.nn.Parameter(torch.randn(s)) for s in sizes]
    for p in params:
        p.grad = torch.randn(p.numel())
    c = _config(spec.optimizer)
    cls = torch.optim.AdamW if c.decoupled else torch.optim.Adam
    opt = cls(params, lr=c.lr, betas=(c.beta1, c.beta2), eps=c.eps, weight_decay=c.weight_decay, foreach=True)
    times = []
    for step in range(spec.steps + 1):
        t0 = time.perf_counter()
        opt.step()
        if step:
            times.append(time.perf_counter() - t0)
    return TorchRun(update_seconds=times, threads=torch.get_num_threads(), version=torch.__version__,
                    peak_rss_bytes=peak_rss_bytes())


ROLES: dict[str, Callable[[NodeBenchSpec], Any]] = {
    "setup": lambda spec: {"create_seconds": _setup(spec)},
    "node": lambda spec: _node(spec).to_json(),
    "torch": lambda spec: _torch(spec).to_json()}
"""Role -> its measurement as the JSON line the process prints."""


def _child(role: str, spec: NodeBenchSpec, timeout: float = 1800.0) -> Any:
    """The JSON a measuring process printed last."""
    out = subprocess.run([sys.executable, "-m", MODULE, role, json.dumps(spec.to_json())],
                         capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        raise RuntimeError(f"{role} process exited with {out.returncode}: {lines[-1] if lines else 'no output'}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(params: int, optimizer: str, steps: int, pieces: int, block: int, threads: int,
            directory: Path) -> NodeBenchRow:
    """One optimizer's row: node and torch on the same shard size."""
    state = directory / f"state-{optimizer}"
    shutil.rmtree(state, ignore_errors=True)
    spec = NodeBenchSpec(params=params, optimizer=optimizer, steps=steps, pieces=pieces, block=block,
                         threads=threads, dir=str(state))
    create_seconds = float(_child("setup", spec)["create_seconds"])
    node = NodeRun(**_child("node", spec))
    shutil.rmtree(state, ignore_errors=True)
    reference = TorchRun(**_child("torch", spec))
    upd = statistics.median(node.update_seconds)
    with_commit = statistics.median(u + c for u, c in zip(node.update_seconds, node.commit_seconds))
    ref = statistics.median(reference.update_seconds)
    return NodeBenchRow(optimizer=optimizer, params=params, create_seconds=create_seconds, node=node, torch=reference,
                        node_params_per_s=params / upd, node_with_commit_params_per_s=params / with_commit,
                        torch_params_per_s=params / ref, ratio=ref / upd, ratio_with_commit=ref / with_commit,
                        state_bytes=2 * 3 * 4 * params)


def _table(rows: Sequence[NodeBenchRow], budget: int) -> str:
    head = (f"{'optimizer':9} {'node Mparam/s':>13} {'+commit':>8} {'torch Mparam/s':>14} {'ratio':>6} "
            f"{'+commit':>8} {'node RSS MiB':>12} {'torch RSS MiB':>13} {'state MiB':>9}")
    lines = [head]
    for r in rows:
        lines.append(f"{r.optimizer:9} {r.node_params_per_s / 1e6:13.1f} "
                     f"{r.node_with_commit_params_per_s / 1e6:8.1f} "
                     f"{r.torch_params_per_s / 1e6:14.1f} {r.ratio:6.2f} {r.ratio_with_commit:8.2f} "
                     f"{r.node.peak_rss_bytes / 2**20:12.0f} {r.torch.peak_rss_bytes / 2**20:13.0f} "
                     f"{r.state_bytes / 2**20:9.0f}")
    lines.append(f"node RSS budget {budget / 2**20:.0f} MiB; target ratio >= {TARGET_RATIO}")
    return "\n".join(lines)


def _plot(rows: Sequence[NodeBenchRow], path: Path, caption: str) -> bool:
    try:
        from innet.testbed.core.report import pyplot

        plt = pyplot()
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r.node_params_per_s / 1e6 for r in rows], 0.4, label="node (out of core)")
    ax.bar([i + 0.2 for i in x], [r.torch_params_per_s / 1e6 for r in rows], 0.4, label="torch foreach (in memory)")
    ax.set_xticks(list(x), [r.optimizer for r in rows])
    ax.set_ylabel("M parameters / s")
    ax.legend()
    fig.text(0.01, 0.01, caption, fontsize=6)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of ``innet bench luwu-node``."""
    ap.add_argument("--params", type=int, default=50_000_000, help="shard size in parameters (default 50 M)")
    ap.add_argument("--optimizers", default="adam,adamw", help="comma-separated: adam, adamw")
    ap.add_argument("--steps", type=int, default=5, help="timed steps after one warm-up step")
    ap.add_argument("--pieces", type=int, default=8, help="gradient pieces (layers) per step")
    ap.add_argument("--block", type=int, default=1 << 16, help="elements per block")
    ap.add_argument("--threads", type=int, default=2, help="node threads (torch uses its default)")
    ap.add_argument("--rss-budget-mib", type=float, default=160.0, help="the node process's peak RSS cap")
    ap.add_argument("--dir", type=Path, default=None, help="where the state files go (default: a temp dir)")
    add_out(ap)


def _child_main(argv: Sequence[str]) -> int:
    """``python -m innet.testbed.luwu.node_bench ROLE SPEC``: one measurement in its own process."""
    role, spec = argv
    print(json.dumps(ROLES[role](NodeBenchSpec(**json.loads(spec)))))
    return 0


def command(args: argparse.Namespace) -> int:
    """``innet bench luwu-node``: every optimizer measured, table, JSON and plot."""
    optimizers = [o.strip() for o in args.optimizers.split(",") if o.strip()]
    bad = [o for o in optimizers if o not in ("adam", "adamw")]
    if bad or args.params < 1 or args.steps < 1 or args.pieces < 1 or args.block < 1 or args.threads < 1:
        print(f"innet bench luwu-node: --optimizers must be adam and/or adamw (got {','.join(bad)}); --params, "
              "--steps, --pieces, --block and --threads must be >= 1", file=sys.stderr)
        return 2
    from innet.testbed.core.machine import describe

    machine = describe().to_json()
    budget = int(args.rss_budget_mib * 2**20)
    work = Path(tempfile.mkdtemp(prefix="innet-bench-node-", dir=args.dir))
    try:
        rows, partial = measure_each("bench luwu-node", optimizers,
                                     lambda o: measure(args.params, o, args.steps, args.pieces, args.block,
                                                       args.threads, work), name=lambda o: f"{o}: node and torch")
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        print(f"bench luwu-node: {error}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    machine["load_average_after"] = describe().load_average
    print(_table(rows, budget))
    over = [r.optimizer for r in rows if r.node.peak_rss_bytes > budget]
    doc = {"benchmark": "luwu-node", "machine": machine, "state_dir_filesystem": str(args.dir or tempfile.gettempdir()),
           "rss_budget_bytes": budget, "target_ratio": TARGET_RATIO, "threads": args.threads, "block": args.block,
           "pieces": args.pieces, "steps": args.steps, "rows": [r.to_json() for r in rows], "over_budget": over, "partial": partial}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "bench_luwu_node.json"
    path.write_text(json.dumps(doc, indent=2))
    caption = (f"{args.params / 1e6:g} M params, {machine['cpu']}, {machine['cores']} cores, "
               f"load {machine['load_average']}")
    png = args.out / "bench_luwu_node.png"
    print(f"wrote {path}" + (f" and {png}" if rows and _plot(rows, png, caption) else ""))
    if partial:
        return interrupted_partial("innet bench luwu-node", path)
    if over:
        print(f"bench luwu-node: node peak RSS over the {args.rss_budget_mib:g} MiB budget for {', '.join(over)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
