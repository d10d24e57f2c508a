"""``innet testbed up --runtime docker`` and ``innet testbed cleanup --runtime docker``, and the
``--switch-impl`` check shared by ``testbed up``, ``bench`` and ``demo`` (thin calls into
``innet.testbed.backends.docker.runtime`` and ``innet.testbed.backends.bmv2``)."""

from __future__ import annotations

import argparse
import os
import sys

from innet.argtypes import EXIT_ERROR, EXIT_USAGE, SWITCH_IMPLS, add_switch_impl



IMPLS = SWITCH_IMPLS


def add_arguments(parser: argparse.ArgumentParser, runtime: bool = False, several: bool = False) -> None:
    """``--switch-impl`` (and ``--runtime`` for ``testbed up``/``cleanup``); ``several``: a
    benchmark taking ``innet,bmv2`` (rows of both, side by side)."""
    add_switch_impl(parser, several=several)
    if runtime:
        parser.add_argument("--runtime", choices=["process", "docker"], default="process",
                            help="process: Mininet or loopback (default); docker: switch, controller and "
                                 "workers as containers (the docker-compose.yml services, via the Docker SDK)")


def check_switch_impl(args: argparse.Namespace, command: str) -> int | None:
    """None when ``--switch-impl`` can be used here (for bmv2: the binaries are there and the
    command brings up what the backend supports); else the exit status after one line on stderr."""
    from innet.testbed.backends.bmv2 import Bmv2Error, Bmv2Missing, check_impl

    chosen = getattr(args, "switch_impl", "innet")
    impls = (chosen,) if isinstance(chosen, str) else tuple(chosen)
    backend = getattr(args, "backend", "auto")
    absent: dict[str, str] = {}
    for impl in impls:
        if impl == "innet":
            continue
        try:
            check_impl(impl, root=os.geteuid() == 0, backend=backend, topo=getattr(args, "topo", "star"),
                       mode=getattr(args, "mode", "switch"))
        except Bmv2Missing as missing:
            if len(impls) == 1:
                print(f"innet {command}: {missing}", file=sys.stderr)
                return EXIT_USAGE
            absent[impl] = str(missing)
            print(f"innet {command}: no {impl} rows: {missing}", file=sys.stderr)
        except Bmv2Error as error:
            print(f"innet {command}: {error}", file=sys.stderr)
            return EXIT_USAGE
    if not isinstance(chosen, str):  # the benchmarks: run what is there, say what is not
        args.switch_impl = tuple(i for i in impls if i not in absent)
        args.switch_absent = absent
    return None


def cmd_up_docker(args: argparse.Namespace) -> int:
    """Build (or reuse) the image, run the container testbed to completion, print the results."""
    from innet.testbed.backends.docker.images import ImageError, build_image
    from innet.testbed.backends.docker.runtime import DockerRuntimeError, DockerTestbed, DockerTestbedConfig, client

    if args.switch_impl != "innet":
        print("innet testbed up: --runtime docker runs innet-switch; BMv2 in containers is the compose file's "
              "bmv2 profile", file=sys.stderr)
        return EXIT_USAGE
    try:
        docker_client = client()
        print("building or reusing the innet image ...", flush=True)
        tag = build_image(docker_client)
        tb = DockerTestbed(DockerTestbedConfig(image=tag, workers=args.workers), docker_client)
        result = tb.run(progress=lambda msg: print(msg, flush=True))
    except (DockerRuntimeError, ImageError) as error:
        print(f"innet testbed up: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_ERROR
    for doc in result.results:
        print(f"worker rank {doc['rank']} ({doc['host']}): {doc['elements']} int32 "
              f"{'exact' if doc['ok'] else 'WRONG'} in {doc['seconds']} s, sha256 {doc['sha256'][:16]}")
        if doc.get("train"):
            t = doc["train"]
            print(f"  training: {t['steps']} steps, test accuracy {t['accuracy']:.3f}, parameters "
                  f"{'bit-exact with' if t['bit_exact'] else 'DIFFERENT from'} the switch's numpy model")
    print(f"run {result.run_id}: containers, network and volume removed")
    good = len(result.results) == args.workers and all(d["ok"] and (not d.get("train") or d["train"]["bit_exact"])
                                                       for d in result.results)
    return 0 if good else EXIT_ERROR


def cmd_cleanup_docker() -> int:
    from innet.testbed.backends.docker.runtime import DockerRuntimeError, client, remove_labelled

    try:
        done = remove_labelled(client())
    except DockerRuntimeError as error:
        print(f"innet testbed cleanup: {error}", file=sys.stderr)
        return EXIT_ERROR
    print("\n".join(done) if done else "no innet containers, networks or volumes")
    return 0
