"""``innet bench cluster``: innet's stack on a 3-node swarm beside the Mininet star, in one run.

    innet bench cluster [--workers 4,8] [--elements 65536] [--repeats 6] [--luwu-steps 10] [--luwu-workers 4]

On the swarm lab (:mod:`innet.testbed.cluster.lab`: dockerd nodes in network namespaces of
this machine) it times the deployment (image build check, push to the lab's registry, ``docker
stack deploy``, deploy to the first allreduce done, deploy to every rank's results, stack
removal) and, per N, the exact int32 allreduce through the switch service (the workers'
:mod:`~innet.testbed.cluster.timed` operations: step time is the slowest rank's per operation,
bytes per worker are the task's interface counters, and the underlay's with VXLAN's 50 bytes a
packet); then, at each ``--luwu-workers`` N, LuWu (one optimizer node, the ``node`` service)
and DDP + gloo training the same model on the same batches (the worker tasks moved off the
switch's node, as LuWu's nodes and switch share one server), each row made by
:func:`innet.testbed.luwu.bench.measure_row` from the trainers' reports: the median over the timed
steps of the slowest rank's step, bytes per worker and step from the task's overlay interface.
Then, with the lab down, the same on the Mininet star with unshaped links (the cluster's
veths and overlay are not shaped either): innet vs gloo (:mod:`innet.testbed.ina.bench`) and
LuWu vs DDP + gloo (:mod:`innet.testbed.luwu.bench`, LuWu on one job as on the swarm), their
own functions, unchanged.

The cluster runs the torch image (:mod:`~innet.testbed.cluster.torch_image`): gloo's ring
allreduce among the worker tasks, timed the same way, beside innet's, and the trainers.
Every node here shares this machine's cores: the numbers say what the engine costs
(container networking, the overlay, Swarm's scheduling), not how innet scales on servers.
Prints tables and writes ``bench_cluster-<stamp>.json`` and ``.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from innet.testbed.cluster.records import (BenchRow, ClusterAllreduceRow, ClusterBench, ClusterSide, ClusterTrainingRow,
                                           Deployment, StarAllreduceRow, StarFailure, StarTrainingRow)
from innet.testbed.cluster.timed import VXLAN_OVERHEAD
from innet.testbed.luwu.status import NodeStatus, UnreadNodeStatus

EXIT_ERROR = 1
EXIT_USAGE = 2
TRAINING = ("ddp-gloo", "luwu")
"""The training workloads timed on both sides (stack workload names; LuWu on one job)."""
STAR_MODES = {"ddp-gloo": "ddp-gloo", "luwu": "luwu-one-job"}
"""Stack workload -> :mod:`innet.testbed.luwu.bench` mode of the same training on the star."""
LR = 0.01
"""Adam's learning rate of both sides' training (:class:`innet.testbed.luwu.bench.BenchSettings`')."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ClusterBenchConfig:
    """One run of ``innet bench cluster``."""

    workers: tuple[int, ...] = (4, 8)
    """Worker counts N (2..8: the Mininet star's limit), one deployment and one star each."""
    elements: int = 65536
    """int32 (cluster) / float32 (Mininet) elements per allreduce: the same bytes."""
    repeats: int = 6
    """Allreduces per worker; the first is the rendezvous and is not timed."""
    luwu_steps: int = 10
    """Timed LuWu / DDP + gloo steps after the warm-up, on both sides (0: no training)."""
    luwu_workers: tuple[int, ...] = (4,)
    """Worker counts of the LuWu / DDP + gloo training (2..8)."""
    mininet: bool = True
    """Run the Mininet star's side (False: the cluster only)."""
    collectives: tuple[str, ...] = ("ina", "gloo")
    """The cluster's allreduces: ``ina`` (through the switch service) and/or ``gloo`` (ring among the workers)."""
    overlay_mtu: int = 1450
    """The stack's overlay MTU (K follows it)."""
    deadline: float = 600.0
    """Seconds one deployment may take to report."""
    out_dir: Path = Path("results")

    def __post_init__(self) -> None:
        if not self.workers or any(not 2 <= n <= 8 for n in self.workers):
            raise ValueError(f"bench cluster workers={self.workers}: each within 2..8 (the Mininet star's limit)")
        if not 1 <= self.elements <= 1 << 22:
            raise ValueError(f"bench cluster elements={self.elements}: must be within 1..4194304")
        if self.repeats < 2:
            raise ValueError(f"bench cluster repeats={self.repeats}: must be >= 2 (the first is not timed)")
        if not self.collectives or set(self.collectives) - {"ina", "gloo"}:
            raise ValueError(f"bench cluster collectives={self.collectives}: one or both of ina, gloo")
        if self.luwu_steps < 0:
            raise ValueError(f"bench cluster luwu_steps={self.luwu_steps}: must be >= 0")
        if not self.luwu_workers or any(not 2 <= n <= 8 for n in self.luwu_workers):
            raise ValueError(f"bench cluster luwu_workers={self.luwu_workers}: each within 2..8 "
                             "(the Mininet star's limit)")


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def cluster_row(n: int, docs: Sequence[dict[str, Any]], deploy_unix: float,
                collective: str = "ina") -> ClusterAllreduceRow:
    """One N's row from the workers' timed result documents (deploy started at ``deploy_unix``)."""
    timed = range(1, min(len(d["times"]) for d in docs))
    per_op = [max(d["times"][i] for d in docs) for i in timed]
    wires = [d["wire_per_op"] for d in docs if d.get("wire_per_op")]
    up = _mean([w["tx_bytes"] for w in wires])
    packets = _mean([w["tx_packets"] for w in wires])
    return ClusterAllreduceRow(
        workload=collective, workers=n, elements=docs[0]["elements"], k=docs[0]["k"], ok=all(d["ok"] for d in docs),
        step_s=_mean(per_op), step_s_min=min(per_op), wire_up_bytes=up,
        wire_down_bytes=_mean([w["rx_bytes"] for w in wires]), underlay_up_bytes=up + VXLAN_OVERHEAD * packets,
        tx_packets=packets, nodes=_nodes(docs), first_step_s=min(d["first_done_unix"] for d in docs) - deploy_unix)


def _nodes(docs: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The swarm nodes the result documents' tasks ran on."""
    return tuple(sorted({d.get("node") or d["host"] for d in docs}))


def push_torch_image(lab: Any, progress: Progress = lambda _: None) -> dict[str, float]:
    """Build the innet image and its torch image on the host engine, push it to ``lab``'s
    registry and set ``lab.image`` to the nodes' ref; the seconds of each step."""
    from innet.testbed.backends.docker.images import build_image
    from innet.testbed.backends.docker.runtime import client as host_client
    from innet.testbed.cluster.registry import push_image
    from innet.testbed.cluster.torch_image import build_torch_image

    host = host_client()
    start = time.monotonic()
    local = build_torch_image(host, build_image(host))
    build_s = time.monotonic() - start
    start = time.monotonic()
    ref = push_image(host, lab.push_registry, local)
    push_s = time.monotonic() - start
    lab.image = ref.replace(lab.push_registry, lab.pull_registry)
    progress(f"image {lab.image}: build (or reuse) {build_s:.1f} s, push {push_s:.1f} s")
    return {"build_check_s": build_s, "push_s": push_s}


def _deploy_timed(lab: Any, spec: Any, deadline: float,
                  progress: Progress) -> tuple[list[dict[str, Any]], dict[str, float], float, list[dict[str, Any]]]:
    """Deploy ``spec`` on ``lab``, wait for every rank, remove it; the documents, the seconds of
    each step, the wall-clock time of the deploy and the LuWu nodes' documents."""
    from innet.testbed.cluster import stack

    client = lab.manager.client
    deploy_unix, start = time.time(), time.monotonic()
    try:
        stack.deploy(client, spec, docker_host=lab.manager.docker_host)
        deploy_s = time.monotonic() - start
        docs = stack.wait_results(client, spec, deadline, progress=progress)
        results_s = time.monotonic() - start
        nodes = stack.wait_node_results(client, spec) if spec.workload == "luwu" else []
    finally:
        start = time.monotonic()
        stack.remove(client, spec.name, docker_host=lab.manager.docker_host,
                     node_clients=tuple(node.client for node in lab.nodes[1:]))
        remove_s = time.monotonic() - start
    return docs, {"stack_deploy_s": deploy_s, "all_results_s": results_s, "stack_rm_s": remove_s}, deploy_unix, nodes


def _node_status(report: dict[str, Any]) -> NodeStatus | UnreadNodeStatus:
    """A swarm node's result (its ``status.json`` with its ``index`` and ``exit``) as the record
    the star's runs hold; one that does not read is kept as why."""
    status = {key: value for key, value in report.items() if key not in ("index", "exit")}
    try:
        return NodeStatus.from_json(status, f"optimizer node {report.get('index')}'s result")
    except ValueError as error:
        return UnreadNodeStatus(str(error))


def training_row(workload: str, n: int, docs: Sequence[dict[str, Any]], nodes: Sequence[dict[str, Any]],
                 steps: int, warmup: int) -> ClusterTrainingRow:
    """One N's training row from the trainers' result documents (``steps`` in all, the first
    ``warmup`` untimed), by :func:`innet.testbed.luwu.bench.measure_row` as on the star."""
    from innet.testbed.luwu.bench import measure_row
    from innet.testbed.luwu.records import TrainerFinal
    from innet.testbed.luwu.run import RunResult

    finals = [TrainerFinal.from_json(d["final"]) for d in docs if d.get("final")]
    errors = {f"worker {d['rank']}": "training failed (see its task's log)" for d in docs if not d["ok"]}
    mode = "luwu" if workload == "luwu" else "ddp-gloo"
    k = int(docs[0]["k"]) if docs else 0
    detail = measure_row(RunResult(mode=mode, finals=finals, nodes=[_node_status(d) for d in nodes], errors=errors),
                         n, True, steps, k, warmup, False if workload == "luwu" else None)
    links = [f.link for f in finals if f.link is not None]
    packets = _mean([li.sent_packets / li.steps for li in links]) if len(links) == n else None
    m, link = detail.measures, detail.link
    up = link.up if link is not None else None
    return ClusterTrainingRow(
        workers=n, k=k, ok=not errors and m is not None and len(docs) == n,
        step_s=m.step_ms / 1e3 if m is not None else None, step_s_p90=m.step_ms_p90 / 1e3 if m is not None else None,
        wire_up_bytes=up, wire_down_bytes=link.down if link is not None else None,
        underlay_up_bytes=up + VXLAN_OVERHEAD * packets if up is not None and packets is not None else None,
        tx_packets=packets, nodes=_nodes(docs), detail=detail)


def measure_cluster(lab: Any, config: ClusterBenchConfig,
                    progress: Progress = lambda _: None) -> tuple[ClusterSide, list[BenchRow]]:
    """Push the torch image to ``lab``'s registry, deploy innet and gloo at every N, time it;
    the image and deployment times, and the rows."""
    import shutil
    import tempfile

    from innet.testbed.cluster import stack
    from innet.testbed.cluster.certs import make_certs

    pushed = push_torch_image(lab, progress)
    tls_root = Path(tempfile.mkdtemp(prefix="innet-bench-tls-"))
    tls = make_certs(tls_root / "tls")  # as `innet cluster up` deploys
    rows: list[BenchRow] = []
    deployments: list[Deployment] = []
    try:
        for n in config.workers:
            for collective in config.collectives:
                spec = stack.ClusterSpec(name=f"innetbench{collective}{n}", image=lab.image, workers=n,
                                         elements=config.elements, train_steps=0, repeats=config.repeats,
                                         collective=collective, overlay_mtu=config.overlay_mtu, deadline=config.deadline,
                                         tls_dir=tls)
                docs, seconds, deploy_unix, _ = _deploy_timed(lab, spec, config.deadline, progress)
                row = cluster_row(n, docs, deploy_unix, collective)
                rows.append(row)
                deployments.append(Deployment(n, collective, row.first_step_s, **seconds))
                progress(f"cluster {collective} N={n}: {row.step_s * 1e3:.1f} ms per allreduce, "
                         f"{'exact' if row.ok else 'WRONG'}, on {', '.join(row.nodes)}")
        rows += _training(lab, config, tls, deployments, progress)
    finally:
        shutil.rmtree(tls_root, ignore_errors=True)
    return ClusterSide(image=lab.image, build_check_s=pushed["build_check_s"], push_s=pushed["push_s"],
                       deployments=tuple(deployments)), rows


def _training(lab: Any, config: ClusterBenchConfig, tls: Path, deployments: list[Deployment],
              progress: Progress) -> list[ClusterTrainingRow]:
    """LuWu and DDP + gloo at every ``luwu_workers`` N on ``lab``, the workers off the switch's
    node (LuWu's optimizer node and switch share it); rows, and their deployments appended."""
    from innet.testbed.cluster import stack
    from innet.testbed.luwu.bench import BenchSettings

    if not config.luwu_steps:
        return []
    warmup = BenchSettings().warmup
    steps = warmup + config.luwu_steps
    client = lab.manager.client
    switch_node = lab.nodes[0].name
    rows = []
    stack.label_node(client, switch_node, stack.WORKER_LABEL, None)
    try:
        for n in config.luwu_workers:
            for workload in TRAINING:
                spec = stack.ClusterSpec(name=f"innetbench{workload.replace('-', '')}{n}", image=lab.image, workers=n,
                                         workload=workload, nodes=1, train_steps=steps, lr=LR,
                                         overlay_mtu=config.overlay_mtu, deadline=config.deadline, tls_dir=tls)
                docs, seconds, _, nodes = _deploy_timed(lab, spec, config.deadline, progress)
                row = training_row(workload, n, docs, nodes, steps, warmup)
                rows.append(row)
                deployments.append(Deployment(n, row.workload, None, **seconds))
                step = f"{row.step_s * 1e3:.1f} ms per step" if row.step_s is not None else "no step time"
                progress(f"cluster {row.workload} N={n}: {step}, {'ok' if row.ok else 'FAILED'}, "
                         f"on {', '.join(row.nodes)}")
    finally:
        stack.label_node(client, switch_node, stack.WORKER_LABEL, "true")
    return rows


def mininet_rows(config: ClusterBenchConfig, progress: Progress = lambda _: None) -> tuple[list[BenchRow], list[str]]:
    """innet vs gloo and LuWu vs DDP + gloo on the unshaped Mininet star at every N; rows and files."""
    from innet.testbed.ina import bench as ina_bench
    from innet.testbed.luwu import bench as luwu_bench

    ina = ina_bench.measure(ina_bench.BenchConfig(workers=config.workers, sizes=(config.elements,), bw_mbps=None,
                                                  repeats=config.repeats - 1, backend="mininet",
                                                  out_dir=config.out_dir), progress=progress)
    files = [str(p) for p in ina_bench.save(ina.to_json(), config.out_dir, stem="bench_cluster_star")] \
        if ina.rows else []
    rows: list[BenchRow] = [StarAllreduceRow(workload=r.collective, workers=r.workers, elements=r.elements, ok=r.ok,
                                             step_s=r.time_max_s, wire_up_bytes=r.wire_up, wire_down_bytes=r.wire_down)
                            for r in ina.rows]
    rows += [StarFailure(workload=f.collective, workers=f.workers, error=f.error) for f in ina.failures]
    if config.luwu_steps:
        luwu = luwu_bench.measure(config.luwu_workers, config.out_dir,
                                  luwu_bench.BenchSettings(steps=config.luwu_steps, mininet=True, lr=LR),
                                  modes=tuple(STAR_MODES[w] for w in TRAINING))
        files += luwu.files
        rows += [StarTrainingRow.of(r) for r in luwu.rows]
    return rows, files


def run(config: ClusterBenchConfig, progress: Progress = lambda _: None, lab: Any = None) -> ClusterBench:
    """The cluster side on ``lab`` (None: a new :class:`~innet.testbed.cluster.lab.SwarmLab`,
    torn down before the Mininet side starts, so the two never share the cores)."""
    from innet.testbed.core.machine import describe as machine

    date = dt.datetime.now().isoformat(timespec="seconds")
    if lab is None:
        from innet.testbed.cluster.lab import SwarmLab

        start = time.monotonic()
        with SwarmLab(progress=progress) as own:
            lab_up_s = time.monotonic() - start
            side, rows = measure_cluster(own, config, progress)
        side = replace(side, lab_up_s=lab_up_s)
    else:
        side, rows = measure_cluster(lab, config, progress)
    settings = {key: (str(v) if isinstance(v, Path) else v) for key, v in asdict(config).items()}
    result = ClusterBench(date=date, machine=machine(), settings=settings, deployment=side, rows=tuple(rows), files=(),
                          not_measured={} if config.luwu_steps else {"LuWu and DDP + gloo": "--luwu-steps 0"},
                          partial=config.mininet)
    if config.mininet:
        progress(f"cluster side saved in {save(result.to_json(), config.out_dir)}; now the Mininet star")
        try:  # Ctrl-C (or a Mininet star that never frees): the cluster side stays saved
            star, files = mininet_rows(config, progress)
        except KeyboardInterrupt:
            return result
        result = replace(result, rows=result.rows + tuple(star), files=tuple(files), partial=False)
    return result


def table(doc: dict[str, Any]) -> str:
    """The rows and the deployment times of a saved document as plain text."""
    lines = [f"{'where':<8} {'workload':<15} {'N':>2} {'ok':<5} {'step ms':>9} {'up kB/worker':>13} "
             f"{'down kB/worker':>15} {'underlay up kB':>15}"]
    for r in sorted(doc["rows"], key=lambda r: (r["workers"], r["workload"], r["where"])):
        def kb(v: Any) -> str:
            return f"{v / 1e3:.1f}" if isinstance(v, (int, float)) else "-"
        step = f"{r['step_s'] * 1e3:.1f}" if isinstance(r.get("step_s"), (int, float)) else "-"
        lines.append(f"{r['where']:<8} {r['workload']:<15} {r['workers']:>2} {str(r['ok']):<5} {step:>9} "
                     f"{kb(r.get('wire_up_bytes')):>13} {kb(r.get('wire_down_bytes')):>15} "
                     f"{kb(r.get('underlay_up_bytes')):>15}" + (f"  {r['error']}" if r.get("error") else ""))
    d = doc["deployment"]
    lines.append(f"deployment: lab up {d['lab_up_s'] or 0:.1f} s, image build (or reuse) {d['build_check_s']:.1f} s, "
                 f"push {d['push_s']:.1f} s")
    for dep in d["deployments"]:
        first = f", first allreduce done {dep['first_step_s']:.1f} s" if dep.get("first_step_s") is not None else ""
        lines.append(f"  {dep['workload']} N={dep['workers']}: stack deploy {dep['stack_deploy_s']:.1f} s{first}, "
                     f"all results {dep['all_results_s']:.1f} s, stack rm {dep['stack_rm_s']:.1f} s after deploy")
    lines += [f"not measured: {what}: {why}" for what, why in doc["not_measured"].items()]
    lines.append(f"note: {doc['caveat']}")
    return "\n".join(lines)


def save(doc: dict[str, Any], out_dir: Path) -> Path:
    """Write the document (:meth:`~innet.testbed.cluster.records.ClusterBench.to_json`) as
    ``bench_cluster-<stamp>.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"bench_cluster-{doc['date'].replace(':', '').replace('-', '')}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def plot(doc: dict[str, Any], path: Path) -> Path | None:
    """Step time and bytes sent per worker of every (workload, N) of a saved document, the
    swarm's bar beside the star's; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    keys = sorted({(r["workload"], r["workers"]) for r in doc["rows"]}, key=lambda key: (key[0], key[1]))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    width = 0.4
    for offset, where in ((-width / 2, "cluster"), (width / 2, "mininet")):
        got = {(r["workload"], r["workers"]): r for r in doc["rows"] if r["where"] == where}
        xs = [i + offset for i in range(len(keys))]
        for ax, field, scale in ((axes[0], "step_s", 1e3), (axes[1], "wire_up_bytes", 1e-3)):
            values = [got[key][field] * scale if isinstance(got.get(key, {}).get(field), (int, float)) else 0.0
                      for key in keys]
            ax.bar(xs, values, width, label="3-node swarm" if where == "cluster" else "Mininet star")
    labels = [f"{workload}\nN={n}" for workload, n in keys]
    for ax, title in ((axes[0], "ms per allreduce / training step"), (axes[1], "kB sent per worker and step")):
        ax.set_xticks(range(len(keys)), labels, fontsize=7)
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.suptitle("innet bench cluster: every node on the same 2 cores (engine cost; the bytes carry over)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _workers(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated integers, e.g. 4,8") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=_workers, default=(4, 8), help="worker counts N, 2..8 (default: 4,8)")
    parser.add_argument("--elements", type=int, default=65536, help="elements per allreduce (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=6,
                        help="allreduces per worker, the first untimed (default: %(default)s)")
    parser.add_argument("--luwu-steps", type=int, default=10,
                        help="timed LuWu / DDP + gloo steps on each side, 0: none (default: %(default)s)")
    parser.add_argument("--luwu-workers", type=_workers, default=(4,),
                        help="worker counts of the LuWu / DDP + gloo training, 2..8 (default: 4)")
    parser.add_argument("--no-mininet", action="store_true", help="the cluster only (no Mininet star)")
    parser.add_argument("--out", type=Path, default=Path("results"), help="output directory (default: %(default)s)")


def command(args: argparse.Namespace) -> int:
    from innet.testbed.backends.docker.images import ImageError
    from innet.testbed.backends.docker.runtime import DockerRuntimeError
    from innet.testbed.cluster.lab import LabError, preconditions
    from innet.testbed.cluster.registry import RegistryError
    from innet.testbed.cluster.stack import ClusterError
    from innet.testbed.cluster.torch_image import TorchImageError

    try:
        config = ClusterBenchConfig(workers=args.workers, elements=args.elements, repeats=args.repeats,
                                    luwu_steps=args.luwu_steps, luwu_workers=args.luwu_workers,
                                    mininet=not args.no_mininet, out_dir=args.out)
    except ValueError as error:
        print(f"innet bench cluster: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    reason = preconditions()
    if reason:
        print(f"innet bench cluster: error: {reason}", file=sys.stderr)
        return EXIT_ERROR
    try:
        result = run(config, progress=lambda line: print(f"  {line}", flush=True))
    except (LabError, ClusterError, RegistryError, ImageError, TorchImageError, DockerRuntimeError) as error:
        print(f"innet bench cluster: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    doc = result.to_json()
    print(table(doc))
    saved = save(doc, config.out_dir)
    png = plot(doc, saved.with_suffix(".png"))
    print(f"wrote {saved}" + (f" and {png}" if png else "") + "".join(f" and {f}" for f in result.files)
          + (" (partial: the cluster side only)" if result.partial else ""))
    return 0 if result.ok else EXIT_ERROR

