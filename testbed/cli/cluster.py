"""``innet cluster``: innet as a Docker Swarm stack on the swarm the local engine (or
``DOCKER_HOST``) manages.

    innet cluster image push --registry 10.0.0.1:5000
    innet cluster up --registry 10.0.0.1:5000 --workers 8
    innet cluster status | logs [SERVICE] | down

Thin calls into :mod:`innet.testbed.cluster`; every failure is one line and exit status 1
(bad options: 2).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from innet.argtypes import int_range, positive_float

EXIT_ERROR = 1
EXIT_USAGE = 2
DEFAULT_NAME = "innet"


def _errors() -> tuple[type[BaseException], ...]:
    from innet.testbed.backends.docker.images import ImageError
    from innet.testbed.backends.docker.runtime import DockerRuntimeError
    from innet.testbed.cluster.certs import CertError
    from innet.testbed.cluster.registry import RegistryError
    from innet.testbed.cluster.stack import ClusterError

    return ClusterError, RegistryError, CertError, DockerRuntimeError, ImageError


def _guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """The cluster errors as one line naming the command, exit status 1."""

    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except _errors() as error:
            print(f"innet cluster {args.cluster_command}: error: {error}", file=sys.stderr)
            return EXIT_ERROR

    return run


def _client() -> Any:
    from innet.testbed.backends.docker.runtime import client

    return client()


def _tls_dir(args: argparse.Namespace) -> Path | None:
    if args.no_tls:
        return None
    if args.tls_dir is not None:
        return Path(args.tls_dir)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "innet" / "cluster" / args.name / "tls"


def _cmd_image_push(args: argparse.Namespace) -> int:
    from innet.testbed.cluster.registry import check_registry, push_image

    check_registry(args.registry)
    start = time.monotonic()
    ref = push_image(_client(), args.registry)
    print(f"pushed {ref} in {time.monotonic() - start:.1f} s")
    return 0


def _cmd_up(args: argparse.Namespace) -> int:
    from innet.testbed.cluster import stack
    from innet.testbed.cluster.certs import make_certs
    from innet.testbed.cluster.registry import image_ref

    if (args.registry is None) == (args.image is None):
        print("innet cluster up: error: give --registry HOST:PORT (the image `innet cluster image push` "
              "pushed there) or --image REF", file=sys.stderr)
        return EXIT_USAGE
    image = args.image or image_ref(args.registry)
    tls = _tls_dir(args)
    if tls is not None:
        make_certs(tls)
    if args.topo == "rail-only":
        return _up_rail(args, image, tls)
    spec = stack.ClusterSpec(name=args.name, image=image, workers=args.workers, elements=args.elements,
                             train_steps=args.steps, overlay_mtu=args.overlay_mtu, tls_dir=tls,
                             deadline=args.timeout)
    client = _client()
    return _deployed(args, spec.name, "workers", lambda: stack.deploy(client, spec),
                     f"{image} ({spec.workers} workers, "
                     f"P4Runtime {'over mutual TLS, keys in ' + str(tls) if tls else 'in plaintext'})",
                     lambda: stack.wait_results(client, spec, args.timeout, progress=lambda line: print(f"  {line}")))


def _deployed(args: argparse.Namespace, name: str, members: str, deploy: Callable[[], Any], what: str,
              wait: Callable[[], list[dict[str, Any]]]) -> int:
    """Deploy, say what, and (unless ``--no-wait``) wait for every member's result and print
    them; exit status 0 when every one is exact (and its training bit-exact). ``wait`` gives
    the result documents the members saved (JSON, as read back from the stack)."""
    start = time.monotonic()
    deploy()
    print(f"stack {name}: deployed {what}")
    if args.no_wait:
        return 0
    docs = wait()
    _print_results(docs)
    print(f"all {len(docs)} {members} reported {time.monotonic() - start:.1f} s after deploy; "
          f"`innet cluster down --name {name}` removes the stack")
    good = all(d["ok"] and (d.get("train") is None or d["train"]["bit_exact"]) for d in docs)
    return 0 if good else EXIT_ERROR


def _up_rail(args: argparse.Namespace, image: str, tls: Path | None) -> int:
    """``up --topo rail-only``: the rail stack (:mod:`innet.testbed.cluster.rail_stack`)."""
    from innet.testbed.cluster import rail_stack

    if tls is None:
        print("innet cluster up: error: --topo rail-only runs P4Runtime over mutual TLS only (drop --no-tls)",
              file=sys.stderr)
        return EXIT_USAGE
    nodes = tuple(n for n in (args.domain_nodes or "").split(",") if n)
    spec = rail_stack.RailClusterSpec(image=image, tls_dir=tls, name=args.name, domains=args.domains,
                                      gpus=args.gpus_per_domain, elements=args.elements,
                                      overlay_mtu=args.overlay_mtu, domain_nodes=nodes, deadline=args.timeout)
    client = _client()
    return _deployed(args, spec.name, "GPUs", lambda: rail_stack.deploy(client, spec),
                     f"{image} (rail-only, {spec.domains} HB domains x {spec.gpus} GPUs, {spec.gpus} rail switches, "
                     f"P4Runtime over mutual TLS, keys in {tls})",
                     lambda: rail_stack.wait_results(client, spec, args.timeout,
                                                     progress=lambda line: print(f"  {line}")))


def _print_results(docs: list[dict[str, Any]]) -> None:
    """One line per member's saved result document."""
    print(f"{'rank':>4}  {'node':<12} {'allreduce':<10} {'K':>5} {'seconds':>8}  training")
    for d in docs:
        train = d.get("train")
        trained = (f"{train['steps']} steps, {'bit-exact' if train['bit_exact'] else 'DIFFERENT'}, "
                   f"accuracy {train['accuracy']}" if train else "-")
        seconds = d["seconds"] if "seconds" in d else round(sum(d.get("times") or [0.0]), 4)
        print(f"{d['rank']:>4}  {d.get('node') or d['host']:<12} {'exact' if d['ok'] else 'WRONG':<10} "
              f"{d['k']:>5} {seconds:>8}  {trained}")


def _cmd_status(args: argparse.Namespace) -> int:
    from innet.testbed.cluster import stack

    client = _client()
    rows = stack.task_rows(client, args.name)
    if not rows:
        print(f"stack {args.name}: not deployed (no services)")
        return 0
    if args.json:
        print(json.dumps({"tasks": rows, "job": stack.job_document(client, args.name),
                          "results": stack.results(client, args.name)}, indent=1))
        return 0
    print(f"{'service':<11} {'slot':>4}  {'node':<14} {'state':<10} message")
    for r in rows:
        print(f"{r['service']:<11} {r['slot']:>4}  {r['node']:<14} {r['state']:<10} {r['message']}")
    job = stack.job_document(client, args.name)
    if job:
        members = (f"{job['domains']} HB domains x {job['gpus']} GPUs on rails {', '.join(job['rails'])}"
                   if job.get("workload") == "rail" else f"{job['workers']} workers")
        print(f"job {job['job']} at epoch {job['epoch']}, {members}, K={job['k']}")
    docs = stack.results(client, args.name)
    if docs:
        _print_results(docs)
    return 0


def _cmd_logs(args: argparse.Namespace) -> int:
    from innet.testbed.cluster import stack

    sys.stdout.write(stack.service_logs(_client(), args.name, args.service, args.tail))
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    from innet.testbed.cluster import stack

    gone = stack.remove(_client(), args.name)
    print("\n".join(gone) if gone else f"stack {args.name}: nothing deployed")
    return 0


def add_commands(sub: Any) -> None:
    """``innet cluster ...`` on the top-level subparsers."""
    cluster = sub.add_parser("cluster", help="deploy innet as a Docker Swarm stack (docker-stack.yml)",
                             description="innet on the Swarm the local Docker engine (or DOCKER_HOST) manages: "
                                         "see docs/containers.md, 'Running on a cluster'.")
    actions = cluster.add_subparsers(dest="cluster_command", required=True)

    def named(p: argparse.ArgumentParser) -> None:
        p.add_argument("--name", default=DEFAULT_NAME, help="stack name (default: %(default)s)")

    image = actions.add_parser("image", help="the innet image in a registry the nodes pull from")
    image_actions = image.add_subparsers(dest="image_command", required=True)
    push = image_actions.add_parser("push", help="build the image locally (Debian packages, as for compose) and "
                                                 "push it to --registry")
    push.add_argument("--registry", required=True, metavar="HOST:PORT",
                      help="registry to push to, e.g. 10.0.0.1:5000 (Debian: docker-registry)")
    push.set_defaults(func=_guarded(_cmd_image_push), cluster_command="image push")

    up = actions.add_parser("up", help="deploy the stack, wait for the workers and print their results")
    named(up)
    up.add_argument("--registry", metavar="HOST:PORT", default=None,
                    help="registry the nodes pull the image from (the one `cluster image push` used)")
    up.add_argument("--image", metavar="REF", default=None, help="image reference instead of --registry")
    up.add_argument("--topo", choices=("star", "rail-only"), default="star",
                    help="star: docker-stack.yml (switch, workers); rail-only: a switch service per rail, an "
                         "overlay per HB domain, a service per GPU (default: %(default)s)")
    up.add_argument("--domains", type=int_range(2, 8), default=2, help="rail-only: HB domains (default: %(default)s)")
    up.add_argument("--gpus-per-domain", type=int_range(2, 8), default=2,
                    help="rail-only: GPUs per HB domain = rails (default: %(default)s)")
    up.add_argument("--domain-nodes", default=None, metavar="NODE,NODE,...",
                    help="rail-only: the swarm node of each HB domain's GPUs (default: nodes labelled innet.worker)")
    up.add_argument("--workers", type=int_range(2, 32), default=2, help="worker replicas (default: %(default)s)")
    up.add_argument("--elements", type=int_range(1, 1 << 24), default=4096,
                    help="int32 elements of the exact allreduce (default: %(default)s)")
    up.add_argument("--steps", type=int_range(0, 100000), default=30,
                    help="demo training steps, 0: none (default: %(default)s)")
    up.add_argument("--overlay-mtu", type=int_range(576, 65000), default=1450,
                    help="MTU of the overlay network; sets K (default: %(default)s, VXLAN over 1500)")
    up.add_argument("--tls-dir", default=None, metavar="DIR",
                    help="P4Runtime TLS files (made there when absent; default: ~/.cache/innet/cluster/NAME/tls)")
    up.add_argument("--no-tls", action="store_true", help="P4Runtime in plaintext (default: mutual TLS)")
    up.add_argument("--no-wait", action="store_true", help="return once deployed (default: wait for results)")
    up.add_argument("--timeout", type=positive_float, default=300.0,
                    help="seconds to wait for the workers (default: %(default)s)")
    up.set_defaults(func=_guarded(_cmd_up), cluster_command="up")

    status = actions.add_parser("status", help="tasks (service, slot, node, state), the job and the results")
    named(status)
    status.add_argument("--json", action="store_true", help="one JSON document (default: tables)")
    status.set_defaults(func=_guarded(_cmd_status), cluster_command="status")

    logs = actions.add_parser("logs", help="a service's logs, gathered from every node")
    named(logs)
    logs.add_argument("service", nargs="?", default="worker",
                      help="service: switch, controller, worker, node; rail-only: rail1.., gpu-d1-g1.. "
                           "(default: %(default)s)")
    logs.add_argument("--tail", type=int_range(1), default=50, help="lines per task (default: %(default)s)")
    logs.set_defaults(func=_guarded(_cmd_logs), cluster_command="logs")

    down = actions.add_parser("down", help="remove the stack: services, network, secrets")
    named(down)
    down.set_defaults(func=_guarded(_cmd_down), cluster_command="down")
