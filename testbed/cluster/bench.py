"""``innet bench cluster``: innet's stack on a 3-node swarm beside the Mininet star, in one run.

    innet bench cluster [--workers 4,8] [--elements 65536] [--repeats 6] [--luwu-steps 10]

On the swarm lab (:mod:`innet.testbed.cluster.lab`: dockerd nodes in network namespaces of
this machine) it times the deployment (image build check, push to the lab's registry, ``docker
stack deploy``, deploy to the first allreduce done, deploy to every rank's results, stack
removal) and, per N, the exact int32 allreduce through the switch service (the workers'
:mod:`~innet.testbed.cluster.timed` operations: step time is the slowest rank's per operation,
bytes per worker are the task's interface counters, and the underlay's with VXLAN's 50 bytes a
packet). Then, with the lab down, the same N on the Mininet star with unshaped links (the
cluster's veths and overlay are not shaped either): innet vs gloo (:mod:`innet.testbed.ina.bench`)
and LuWu vs DDP + gloo (:mod:`innet.testbed.luwu.bench`), their own functions, unchanged.

The cluster runs the torch image (:mod:`~innet.testbed.cluster.torch_image`): gloo's ring
allreduce among the worker tasks, timed the same way, beside innet's. LuWu and DDP run on the
Mininet star only; the document names that under ``not_measured``.
Every node here shares this machine's cores: the numbers say what the engine costs
(container networking, the overlay, Swarm's scheduling), not how innet scales on servers.
Prints tables and writes ``bench_cluster-<stamp>.json`` under ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from innet.testbed.cluster.timed import VXLAN_OVERHEAD

EXIT_ERROR = 1
EXIT_USAGE = 2
NOT_MEASURED = {
    "cluster LuWu and DDP + gloo": "the stack runs both (INNET_WORKLOAD=luwu, ddp; tests/cluster checks "
                                   "them), but this command does not time them yet",
}
"""Workloads of the comparison this run cannot take on the cluster, and why."""

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
    """Timed LuWu / DDP steps on the Mininet star (0: skip LuWu)."""
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


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def cluster_row(n: int, docs: Sequence[dict[str, Any]], deploy_unix: float, collective: str = "ina") -> dict[str, Any]:
    """One N's row from the workers' timed documents (deploy started at ``deploy_unix``)."""
    timed = range(1, min(len(d["times"]) for d in docs))
    per_op = [max(d["times"][i] for d in docs) for i in timed]
    wires = [d["wire_per_op"] for d in docs if d.get("wire_per_op")]
    up = _mean([w["tx_bytes"] for w in wires])
    packets = _mean([w["tx_packets"] for w in wires])
    return {"where": "cluster", "workload": collective, "workers": n, "elements": docs[0]["elements"], "k": docs[0]["k"],
            "ok": all(d["ok"] for d in docs), "step_s": _mean(per_op), "step_s_min": min(per_op),
            "wire_up_bytes": up, "wire_down_bytes": _mean([w["rx_bytes"] for w in wires]),
            "underlay_up_bytes": up + VXLAN_OVERHEAD * packets, "tx_packets": packets,
            "nodes": sorted({d.get("node") or d["host"] for d in docs}),
            "first_step_s": min(d["first_done_unix"] for d in docs) - deploy_unix}


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


def _deploy_timed(lab: Any, spec: Any, deadline: float, progress: Progress) -> tuple[list[dict[str, Any]], dict[str, float], float]:
    """Deploy ``spec`` on ``lab``, wait for every rank, remove it; the documents, the seconds of
    each step, and the wall-clock time of the deploy."""
    from innet.testbed.cluster import stack

    client = lab.manager.client
    deploy_unix, start = time.time(), time.monotonic()
    try:
        stack.deploy(client, spec, docker_host=lab.manager.docker_host)
        deploy_s = time.monotonic() - start
        docs = stack.wait_results(client, spec, deadline, progress=progress)
        results_s = time.monotonic() - start
    finally:
        start = time.monotonic()
        stack.remove(client, spec.name, docker_host=lab.manager.docker_host,
                     node_clients=tuple(node.client for node in lab.nodes[1:]))
        remove_s = time.monotonic() - start
    return docs, {"stack_deploy_s": deploy_s, "all_results_s": results_s, "stack_rm_s": remove_s}, deploy_unix


def measure_cluster(lab: Any, config: ClusterBenchConfig, progress: Progress = lambda _: None) -> dict[str, Any]:
    """Push the torch image to ``lab``'s registry, deploy innet and gloo at every N, time it;
    rows and deployment times."""
    import shutil
    import tempfile

    from innet.testbed.cluster import stack
    from innet.testbed.cluster.certs import make_certs

    pushed = push_torch_image(lab, progress)
    tls_root = Path(tempfile.mkdtemp(prefix="innet-bench-tls-"))
    tls = make_certs(tls_root / "tls")  # as `innet cluster up` deploys
    rows, deployments = [], []
    try:
        for n in config.workers:
            for collective in config.collectives:
                spec = stack.ClusterSpec(name=f"innetbench{collective}{n}", image=lab.image, workers=n,
                                         elements=config.elements, train_steps=0, repeats=config.repeats,
                                         collective=collective, overlay_mtu=config.overlay_mtu, deadline=config.deadline,
                                         tls_dir=tls)
                docs, seconds, deploy_unix = _deploy_timed(lab, spec, config.deadline, progress)
                row = cluster_row(n, docs, deploy_unix, collective)
                rows.append(row)
                deployments.append({"workers": n, "workload": collective, "first_step_s": row["first_step_s"], **seconds})
                progress(f"cluster {collective} N={n}: {row['step_s'] * 1e3:.1f} ms per allreduce, "
                         f"{'exact' if row['ok'] else 'WRONG'}, on {', '.join(row['nodes'])}")
    finally:
        shutil.rmtree(tls_root, ignore_errors=True)
    return {"image": lab.image, **pushed, "deployments": deployments, "rows": rows}


def mininet_rows(config: ClusterBenchConfig, progress: Progress = lambda _: None) -> tuple[list[dict[str, Any]], list[str]]:
    """innet vs gloo and LuWu vs DDP + gloo on the unshaped Mininet star at every N; rows and files."""
    from innet.testbed.ina import bench as ina_bench
    from innet.testbed.luwu import bench as luwu_bench

    ina = ina_bench.run(ina_bench.BenchConfig(workers=config.workers, sizes=(config.elements,), bw_mbps=None,
                                              repeats=config.repeats - 1, backend="mininet", out_dir=config.out_dir),
                        progress=progress)
    files = [str(p) for p in ina_bench.save(ina, config.out_dir, stem="bench_cluster_star")] if ina["rows"] else []
    rows = [{"where": "mininet", "workload": r["collective"], "workers": r["workers"], "elements": r["elements"],
             "ok": r["ok"], "step_s": r["time_max_s"], "wire_up_bytes": r["wire_up"], "wire_down_bytes": r["wire_down"]}
            for r in ina["rows"]]
    rows += [{"where": "mininet", "workload": f["collective"], "workers": f["workers"], "ok": False,
              "error": f["error"]} for f in ina["failures"]]
    if config.luwu_steps:
        luwu = luwu_bench.run(config.workers, config.out_dir,
                              luwu_bench.BenchSettings(steps=config.luwu_steps, mininet=True),
                              modes=("ddp-gloo", "luwu"))
        files += luwu.get("files", [])
        for r in luwu["rows"]:
            up = r.get("link_up_bytes_per_step")
            rows.append({"where": "mininet", "workload": r["mode"], "workers": r["workers"], "ok": "step_ms" in r,
                         "step_s": r["step_ms"] / 1e3 if "step_ms" in r else None, "wire_up_bytes": up,
                         "wire_down_bytes": r.get("link_down_bytes_per_step")})
    return rows, files


def run(config: ClusterBenchConfig, progress: Progress = lambda _: None, lab: Any = None) -> dict[str, Any]:
    """The cluster side on ``lab`` (None: a new :class:`~innet.testbed.cluster.lab.SwarmLab`,
    torn down before the Mininet side starts, so the two never share the cores)."""
    from innet.testbed.core.machine import describe as machine

    date = dt.datetime.now().isoformat(timespec="seconds")
    if lab is None:
        from innet.testbed.cluster.lab import SwarmLab

        start = time.monotonic()
        with SwarmLab(progress=progress) as own:
            lab_up_s = time.monotonic() - start
            cluster = measure_cluster(own, config, progress)
    else:
        lab_up_s = None
        cluster = measure_cluster(lab, config, progress)
    cluster["lab_up_s"] = lab_up_s
    settings = {key: (str(v) if isinstance(v, Path) else v) for key, v in asdict(config).items()}
    doc: dict[str, Any] = {
        "format": "innet-bench-cluster/1", "date": date, "machine": machine(), "settings": settings,
        "deployment": cluster, "rows": list(cluster.pop("rows")), "not_measured": NOT_MEASURED, "files": [],
        "partial": config.mininet,
        "caveat": "every swarm node and the Mininet star share this machine's cores: the step times measure "
                  "the engine's cost (container networking, VXLAN overlay), not scale; the bytes per worker "
                  "carry over to real machines"}
    if config.mininet:
        progress(f"cluster side saved in {save(doc, config.out_dir)}; now the Mininet star")
        try:  # Ctrl-C (or a Mininet star that never frees): the cluster side stays saved
            star, doc["files"] = mininet_rows(config, progress)
        except KeyboardInterrupt:
            return doc
        doc["rows"] += star
        doc["partial"] = False
    return doc


def table(doc: dict[str, Any]) -> str:
    """The rows and the deployment times as plain text."""
    lines = [f"{'where':<8} {'workload':<9} {'N':>2} {'ok':<5} {'step ms':>9} {'up kB/worker':>13} "
             f"{'down kB/worker':>15} {'underlay up kB':>15}"]
    for r in sorted(doc["rows"], key=lambda r: (r["workers"], r["workload"], r["where"])):
        def kb(v: Any) -> str:
            return f"{v / 1e3:.1f}" if isinstance(v, (int, float)) else "-"
        step = f"{r['step_s'] * 1e3:.1f}" if isinstance(r.get("step_s"), (int, float)) else "-"
        lines.append(f"{r['where']:<8} {r['workload']:<9} {r['workers']:>2} {str(r['ok']):<5} {step:>9} "
                     f"{kb(r.get('wire_up_bytes')):>13} {kb(r.get('wire_down_bytes')):>15} "
                     f"{kb(r.get('underlay_up_bytes')):>15}" + (f"  {r['error']}" if r.get("error") else ""))
    d = doc["deployment"]
    lines.append(f"deployment: lab up {d['lab_up_s'] or 0:.1f} s, image build (or reuse) {d['build_check_s']:.1f} s, "
                 f"push {d['push_s']:.1f} s")
    for dep in d["deployments"]:
        lines.append(f"  {dep['workload']} N={dep['workers']}: stack deploy {dep['stack_deploy_s']:.1f} s, first allreduce done "
                     f"{dep['first_step_s']:.1f} s, all results {dep['all_results_s']:.1f} s, "
                     f"stack rm {dep['stack_rm_s']:.1f} s after deploy")
    lines += [f"not measured: {what}: {why}" for what, why in doc["not_measured"].items()]
    lines.append(f"note: {doc['caveat']}")
    return "\n".join(lines)


def save(doc: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"bench_cluster-{doc['date'].replace(':', '').replace('-', '')}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
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
                        help="timed LuWu / DDP + gloo steps on the Mininet star, 0: none (default: %(default)s)")
    parser.add_argument("--no-mininet", action="store_true", help="the cluster only (no Mininet star)")
    parser.add_argument("--out", type=Path, default=Path("results"), help="output directory (default: %(default)s)")


def command(args: argparse.Namespace) -> int:
    from innet.testbed.backends.docker.images import ImageError
    from innet.testbed.cluster.lab import LabError, preconditions
    from innet.testbed.cluster.registry import RegistryError
    from innet.testbed.cluster.stack import ClusterError
    from innet.testbed.cluster.torch_image import TorchImageError

    try:
        config = ClusterBenchConfig(workers=args.workers, elements=args.elements, repeats=args.repeats,
                                    luwu_steps=args.luwu_steps, mininet=not args.no_mininet, out_dir=args.out)
    except ValueError as error:
        print(f"innet bench cluster: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    reason = preconditions()
    if reason:
        print(f"innet bench cluster: error: {reason}", file=sys.stderr)
        return EXIT_ERROR
    try:
        doc = run(config, progress=lambda line: print(f"  {line}", flush=True))
    except (LabError, ClusterError, RegistryError, ImageError, TorchImageError) as error:
        print(f"innet bench cluster: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    print(table(doc))
    print(f"wrote {save(doc, config.out_dir)}" + "".join(f" and {f}" for f in doc["files"])
          + (" (partial: the cluster side only)" if doc["partial"] else ""))
    return 0 if all(r["ok"] for r in doc["rows"]) else EXIT_ERROR

