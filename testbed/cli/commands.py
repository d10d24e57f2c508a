"""The ``demo``, ``bench`` and ``testbed`` subcommands of ``innet`` (thin calls into the testbed API).

``innet.cli`` registers them with :func:`add_commands`; each handler parses its flags into
a config value, calls one library function and turns its outcome into an exit status.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from innet.argtypes import (EXIT_ERROR, EXIT_USAGE, Reporter, UsageError, add_backend, add_executor, add_out,
                            add_topo, add_values_per_packet, add_workers, brought_up, float_list, input_file,
                            int_range, interrupted, interrupted_partial, not_applicable, positive_float, sizes)
from innet.wire import SUPPORTED_K
from innet.testbed.backends.mininet.console import quiet_mininet, run_cli
from innet.testbed.backends.select import open_testbed, resolve_backend


def _console() -> Any:
    from innet.argtypes import console

    return console()


def _terminate_on_sigterm() -> None:
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


# -- demo ------------------------------------------------------------------------------------


RAIL_DEMO_STEPS = 50
"""``innet demo --topo rail-*`` trains this many steps unless --steps is given: the demo's
collectives on the shaped rail links come after training and take minutes of their own."""


def check_demo_flags(args: argparse.Namespace) -> None:
    """UsageError naming a flag that the chosen mode or topology would ignore."""
    if args.mode == "luwu":
        not_applicable(args, ("topo", "domains", "gpus_per_domain", "executor", "sizes", "no_gloo"),
                       "to --mode luwu (a star of PyTorch workers and optimizer nodes)")
    elif args.topo != "star":
        not_applicable(args, ("workers", "executor", "no_gloo"),
                       f"to --topo {args.topo} (--domains x --gpus-per-domain GPUs, hierarchical INA)")
    else:
        not_applicable(args, ("domains", "gpus_per_domain"), "to --topo star (give --workers)")


def cmd_demo(args: argparse.Namespace) -> int:
    from innet.testbed.ina.demo import DemoConfig, run
    from innet.testbed.ina.records import PartialDemo
    from innet.testbed.cli.containers import check_switch_impl

    check_demo_flags(args)
    if (rc := check_switch_impl(args, args.command)) is not None:
        return rc

    quiet_mininet()
    _terminate_on_sigterm()
    if args.mode == "luwu":
        from innet.testbed.luwu.demo import LuwuDemoConfig, run as run_luwu
        from innet.testbed.luwu.records import PartialLuwuDemo

        config_luwu = LuwuDemoConfig(workers=args.workers, steps=args.steps, backend=args.backend,
                                     out_dir=args.out, switch_impl=args.switch_impl, command=f"innet {args.command}")
        luwu = run_luwu(config_luwu, _console())
        if isinstance(luwu, PartialLuwuDemo):
            return interrupted_partial(f"innet {args.command}", luwu.file)
        return 0 if luwu.good else EXIT_ERROR
    if args.topo != "star":
        from innet.testbed.rail.demo import PartialRailDemo, RailDemoConfig, run as run_rail

        steps = args.steps if "steps" in getattr(args, "given", ()) or not args.benchmark else RAIL_DEMO_STEPS
        sizes = {"sizes": args.sizes} if "sizes" in getattr(args, "given", ()) else {}
        try:
            rail_config = RailDemoConfig(topo=args.topo, domains=args.domains, gpus_per_domain=args.gpus_per_domain,
                                         steps=steps, backend=args.backend, switch_impl=args.switch_impl,
                                         out_dir=args.out, benchmark=args.benchmark, **sizes)
        except ValueError as error:
            raise UsageError(str(error)) from None
        rail = run_rail(rail_config, _console())
        if isinstance(rail, PartialRailDemo):
            return interrupted_partial(f"innet {args.command}", rail.file)
        return 0 if rail.good else EXIT_ERROR
    config = DemoConfig(workers=args.workers, steps=args.steps, backend=args.backend, gloo=not args.no_gloo,
                        bench_sizes=args.sizes, out_dir=args.out, executor=args.executor, switch_impl=args.switch_impl,
                        benchmark=args.benchmark)
    result = run(config, _console())
    if isinstance(result, PartialDemo):
        return interrupted(f"innet {args.command}", f"{result.files[0]} (the steps before Ctrl-C)")
    return 0 if result.good else EXIT_ERROR


# -- bench -----------------------------------------------------------------------------------


def cmd_rail_bench(args: argparse.Namespace) -> int:
    from innet.testbed.rail import bench as rail_bench

    try:
        config = rail_bench.RailBenchConfig(
            topo=args.topo, domains=args.domains, gpus_per_domain=args.gpus_per_domain,
            nic_mbps=10.0 if args.bw is None else args.bw, hb_mbps=args.hb_bw, sizes=args.sizes, pair_bytes=args.pair_bytes,
            repeats=args.repeats, k=rail_bench.RailBenchConfig.k if args.k is None else args.k, window=args.window,
            gloo="gloo" not in args.skip, backend=args.backend, out_dir=args.out,
            switch_impls=tuple(args.switch_impl), small_frames_first=args.small_frames_first)
    except ValueError as error:
        print(f"innet bench: {error}", file=sys.stderr)
        return EXIT_USAGE
    console = _console()
    absent = tuple(getattr(args, "switch_absent", {}).items())
    with Reporter(console, f"bench {args.topo}") as report:
        result = rail_bench.run(config, progress=report, absent=absent)
    doc = result.to_json()
    console.print(rail_bench.table(doc))
    for s in result.slowdowns:
        console.print(rail_bench.slowdown_line(s))
    json_path, png_path = rail_bench.save(doc, config.out_dir)
    console.print(f"wrote {json_path} and {png_path}")
    if result.partial:
        return interrupted_partial("innet bench", json_path)
    if args.markdown:
        print(rail_bench.markdown(doc))
    for failure in result.failures:
        console.print(f"[red]failed[/]: {failure.collective} ({failure.switch_impl}): {failure.error}",
                      markup=True, highlight=False)
    return 0 if all(r.ok for r in result.rows) and not result.failures else EXIT_ERROR


NAMED_BENCHMARKS: dict[str, tuple[str, str]] = {
    "luwu": ("innet.testbed.luwu.bench", "LuWu vs DDP (+gloo, +innet hook) training steps"),
    "luwu-node": ("innet.testbed.luwu.node_bench", "optimizer node Adam/AdamW updates vs torch.optim.Adam (foreach)"),
    "agent": ("innet.testbed.microbench.agent", "host agent datapath, chunks/s (native vs python)"),
    "pipeline": ("innet.testbed.microbench.pipeline", "P4 executor alone, packets per CPU-second"),
    "p4runtime": ("innet.testbed.microbench.p4runtime", "P4Runtime writes/reads and innet-switch on veths"),
    "veth": ("innet.testbed.microbench.veth", "innet-switch on one veth against the C reflector ceiling (root)"),
    "soak": ("innet.testbed.ina.soak", "exact allreduces for minutes under loss, duplication and restarts"),
    "rail-failover": ("innet.testbed.rail.failover_bench", "a spare HB domain replacing a dead one mid-training: "
                                                           "recovery time, exactness"),
    "cluster": ("innet.testbed.cluster.bench", "innet's stack on a 3-node swarm lab beside the Mininet star: "
                                               "step time, bytes per worker, deployment time (root)"),
}
"""``innet bench NAME [options]``: sub-commands of ``innet bench``, each module giving
``add_arguments(parser)`` and ``command(args)``; ``innet bench`` without a name is the
allreduce benchmark."""


def _add_named_benchmarks(bench: argparse.ArgumentParser) -> None:
    import importlib

    from innet.argtypes import plain

    names = bench.add_subparsers(dest="bench_name", metavar="NAME", title="other benchmarks",
                                 description="innet bench NAME --help: the options of each")
    for name, (module_name, help_) in NAMED_BENCHMARKS.items():
        module = importlib.import_module(module_name)
        p = names.add_parser(name, help=help_, description=plain((module.__doc__ or help_).split("\n\n")[0]))
        module.add_arguments(p)
        p.set_defaults(func=module.command)


def cmd_bench(args: argparse.Namespace) -> int:
    from innet.testbed.ina import bench
    from innet.testbed.cli.containers import check_switch_impl

    if (rc := check_switch_impl(args, "bench")) is not None:
        return rc
    if args.small_frames_first and args.topo == "star":
        print("innet bench: --small-frames-first applies to --topo rail-only|rail-optimized", file=sys.stderr)
        return EXIT_USAGE
    if resolve_backend(args.backend) == "loopback":
        not_applicable(args, ("bw", "delay", "small_frames_first"), "on loopback (UDP ports, no links to shape; "
                                                                    "Mininet needs root)")
    if args.topo == "star":
        not_applicable(args, ("domains", "gpus_per_domain", "hb_bw", "pair_bytes"), "to --topo star (give --workers)")
    else:
        not_applicable(args, ("workers", "loss", "delay", "mtu", "executor", "timeout"),
                       f"to --topo {args.topo} (--domains x --gpus-per-domain GPUs on shaped rail links)")

    quiet_mininet()
    _terminate_on_sigterm()
    if args.topo != "star":
        return cmd_rail_bench(args)
    try:
        config = bench.BenchConfig(workers=args.workers, sizes=args.sizes, losses=args.loss,
                                   bw_mbps=(1000.0 if args.bw is None else args.bw) or None, delay_ms=args.delay,
                                   repeats=args.repeats, k=args.k, mtu=args.mtu,
                                   window=args.window, backend=args.backend, out_dir=args.out, executor=args.executor,
                                   switch_impls=args.switch_impl, timeout_s=args.timeout,
                                   collectives=tuple(c for c in ("ina", "gloo") if c not in args.skip))
    except ValueError as error:
        print(f"innet bench: {error}", file=sys.stderr)
        return EXIT_USAGE
    console = _console()
    absent = tuple(getattr(args, "switch_absent", {}).items())
    points = len(config.switch_impls) * len(config.workers) * len(config.losses) * len(config.collectives)
    with Reporter(console, "bench", total=points,
                  counts=lambda msg: msg.startswith(tuple(f"{c}:" for c in config.collectives))) as report:
        result = bench.measure(config, progress=report, absent=absent)
    doc = result.to_json()
    console.print(bench.table(doc))
    json_path, png_path = bench.save(doc, config.out_dir)
    console.print(f"wrote {json_path} and {png_path}")
    if result.partial:
        return interrupted_partial("innet bench", json_path)
    if args.markdown:
        print(bench.markdown_table(doc))
    for failure in result.failures:
        console.print(f"[red]failed[/]: {failure.collective} with {failure.workers} workers at "
                      f"{failure.loss_pct:g}% loss: {failure.error}", markup=True, highlight=False)
    return 0 if all(r.ok for r in result.rows) and not result.failures else EXIT_ERROR


# -- testbed ---------------------------------------------------------------------------------


def check_testbed_flags(args: argparse.Namespace) -> None:
    """UsageError naming a ``testbed up`` flag that the chosen runtime, topology or backend would ignore."""
    rail = ("domains", "gpus_per_domain", "hb_bw")
    links = ("bw", "delay", "link_loss", "mtu")
    if args.runtime == "docker":
        not_applicable(args, ("topo", "topo_file", *rail, *links, "k", "switch_loss", "backend", "executor", "no_cli",
                              "name"), "to --runtime docker (the compose services; give --workers)")
        return
    if args.topo_file is not None:
        not_applicable(args, ("topo", "workers", *rail, *links), "with --topo-file (the file gives topology and links)")
    elif args.topo == "star":
        not_applicable(args, rail, "to --topo star (give --workers)")
    else:
        not_applicable(args, ("workers",), f"to --topo {args.topo} (--domains x --gpus-per-domain GPUs)")
    if resolve_backend(args.backend) == "loopback":  # --mtu still bounds K there
        not_applicable(args, ("bw", "delay", "link_loss"), "on loopback (UDP ports, no links to shape; Mininet "
                                                            "needs root)")
    else:
        not_applicable(args, ("switch_loss",), "on Mininet (it drops switch output on loopback; --link-loss here)")


def cmd_testbed_up(args: argparse.Namespace) -> int:
    from innet.controller.errors import ControllerError
    from innet.testbed.core.testbed import Testbed, TestbedError, options_for
    from innet.testbed.cli.containers import check_switch_impl, cmd_up_docker
    from innet.testbed.core.topology import TOPOLOGIES, Link, Topology, TopologyError

    check_testbed_flags(args)
    if args.runtime == "docker":
        return cmd_up_docker(args)
    if (rc := check_switch_impl(args, "testbed up")) is not None:
        return rc
    from innet.testbed.cli.live import name_problem

    if (problem := name_problem(args.name)) is not None:
        print(f"innet testbed up: --name: {problem}", file=sys.stderr)
        return EXIT_USAGE
    quiet_mininet()
    _terminate_on_sigterm()
    console = _console()
    try:
        if args.topo_file is not None:
            topo = Topology.load(args.topo_file)
        elif args.topo == "star":
            link = Link(bw_mbps=args.bw, delay_ms=args.delay, loss_pct=args.link_loss, mtu=args.mtu)
            topo = TOPOLOGIES[args.topo](workers=args.workers, link=link)
        else:
            nic = Link(bw_mbps=args.bw, delay_ms=args.delay, loss_pct=args.link_loss, mtu=args.mtu)
            topo = TOPOLOGIES[args.topo](domains=args.domains, gpus_per_domain=args.gpus_per_domain,
                                        nic_link=nic, hb_link=Link(bw_mbps=args.hb_bw))
    except TopologyError as error:
        print(f"innet testbed up: {error}", file=sys.stderr)
        return EXIT_USAGE
    backend = resolve_backend(args.backend)
    loopback = backend == "loopback"
    try:
        options = options_for(topo, args.k, switch_loss=args.switch_loss / 100 if loopback else 0.0,
                              switch_executor=args.executor, switch_impl=args.switch_impl, name=args.name,
                              fixed_ports=True)
    except ValueError as error:
        if str(error).startswith("K="):
            print(f"innet testbed up: {error}", file=sys.stderr)
            return EXIT_USAGE
        print(f"innet testbed up: --switch-loss {args.switch_loss:g}: must be a percentage within 0..100 "
              "(100 excluded)", file=sys.stderr)
        return EXIT_USAGE
    if loopback and args.backend == "auto":
        console.print("[yellow]not root: bringing the topology up on loopback[/]")
    console.print(str(topo), markup=False, highlight=False)
    try:
        if len(topo.switches) > 1:
            from innet.testbed.rail.testbed import RailTestbed

            tb: Testbed = RailTestbed(topo, options, backend=backend)
        else:
            tb = open_testbed(topo, options, backend=backend)
    except TestbedError as error:
        print(f"innet testbed up: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        with brought_up(tb, Reporter(console, f"bringing up {len(topo.switches)} switch(es) on {backend}")):
            addresses = tb.grpc_addresses
            where = ", ".join(f"{name} {addr} (device {topo.switch(name).device_id})"
                              for name, addr in addresses.items())
            console.print(f"[green]up[/] ({tb.kind}): P4Runtime {where}; job {tb.job.job_id} ({tb.job.mode}, "
                          f"{tb.job.num_workers} workers per switch, {tb.job.slot_count} slots, K={tb.options.k}); "
                          f"run dir {tb.procs.dir}")
            from innet.testbed.cli.live import up_lines

            for line in up_lines(tb):
                console.print(line, markup=False, highlight=False)
            if not loopback and not args.no_cli:
                run_cli(tb.network.net)  # type: ignore[attr-defined]  # the Mininet network's
            else:
                console.print(f"waiting; Ctrl-C (or `innet testbed down {tb.name}`) tears it down")
                while True:
                    time.sleep(3600)
    except KeyboardInterrupt:
        pass
    except (TestbedError, ControllerError) as error:
        print(f"innet testbed up: error: {error}; logs kept in {tb.procs.dir}", file=sys.stderr)
        return EXIT_ERROR
    console.print("testbed down")
    return 0


def cmd_testbed_down(args: argparse.Namespace) -> int:
    from innet.testbed.backends.mininet.clean import cleanup, down

    if getattr(args, "name", None) is not None:
        from innet.testbed.cli.live import cmd_down_named

        return cmd_down_named(args)
    if getattr(args, "runtime", "process") == "docker":
        from innet.testbed.cli.containers import cmd_cleanup_docker

        return cmd_cleanup_docker()

    done = down() if args.action == "down" else cleanup()
    for line in done:
        print(line)
    if not done:
        print("nothing to clean up")
    return 0


def add_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register ``demo``, ``train``, ``bench`` (and ``bench NAME``) and ``testbed`` on the ``innet`` parser."""
    from innet.testbed.core.testbed import MAX_WINDOW
    from innet.testbed.cli.containers import add_arguments as add_switch_impl

    demo = sub.add_parser("demo", help="bring up a 4-worker star, train with the switch as optimizer, "
                                       "compare with gloo; results under results/")
    train = sub.add_parser("train", help="bring up a testbed and train the digits model with the switch as "
                                         "optimizer (the demo without its allreduce benchmark)")
    for p in (demo, train):
        add_workers(p, 4, "star: workers; --mode luwu: workers of the LuWu job (rail topologies: "
                          "--domains x --gpus-per-domain instead)", minimum=2)
        add_topo(p, "star, or a rail network training with hierarchical INA (--mode switch only)")
        p.add_argument("--domains", type=int, default=2, help="rail topologies: HB domains")
        p.add_argument("--gpus-per-domain", type=int, default=4, help="rail topologies: GPUs per domain")
        p.add_argument("--steps", type=int_range(1), default=150,
                       help=f"training steps (default 150; innet demo on rail topologies: {RAIL_DEMO_STEPS})")
        add_backend(p)
        p.add_argument("--mode", choices=("switch", "luwu"), default="switch",
                       help="switch: the P4 switch is the optimizer; luwu: optimizer nodes with "
                            "out-of-core Adam, PyTorch workers pushing/pulling per layer")
        add_executor(p, what="switch packet executor (star, --mode switch)")
        add_out(p)
        add_switch_impl(p)
    demo.add_argument("--sizes", type=sizes, default=(16384, 262144), help="star: allreduce benchmark sizes")
    demo.add_argument("--no-gloo", action="store_true", help="star: skip the gloo baseline")
    demo.set_defaults(func=cmd_demo, benchmark=True)
    train.set_defaults(func=cmd_demo, benchmark=False, sizes=(), no_gloo=True)

    bench = sub.add_parser("bench", help="allreduce benchmark: innet INA vs gloo ring on the same testbed "
                                         "(--topo rail-*: hierarchical INA and all-to-all too); "
                                         "innet bench NAME: " + ", ".join(NAMED_BENCHMARKS))
    add_workers(bench, (2, 4), "star: worker counts, e.g. 2,4,8")
    bench.add_argument("--sizes", type=sizes, default=(1024, 16384, 262144),
                       help="elements per allreduce, e.g. 1K,64K,1M,16M")
    bench.add_argument("--loss", type=float_list, default=(0.0,), help="star: loss percentages, e.g. 0,1,5")
    bench.add_argument("--bw", type=float, default=None,
                       help="link rate in Mbit/s, 0: unshaped (Mininet; default 1000, rail topologies: NIC C_S 10)")
    bench.add_argument("--delay", type=float, default=None, help="star: one-way link delay in ms (Mininet)")
    bench.add_argument("--repeats", type=int_range(1), default=2, help="timed operations per point")
    add_values_per_packet(bench, choices=SUPPORTED_K)
    bench.add_argument("--mtu", type=int, default=None,
                       help="star: link MTU, 576..9000, for innet and gloo alike (Mininet; default 1500)")
    bench.add_argument("--window", type=int_range(1, MAX_WINDOW), default=16, help="slots per job")
    add_backend(bench)
    add_executor(bench, what="switch packet executor (star)")
    bench.add_argument("--skip", action="append", default=[], choices=["ina", "gloo"],
                       help="leave one out (repeatable)")
    add_out(bench)
    bench.add_argument("--markdown", action="store_true", help="also print the rows as a Markdown table")
    add_topo(bench, "star: flat INA vs gloo per worker count; rail-*: hierarchical/flat INA, gloo, all-to-all")
    bench.add_argument("--domains", type=int, default=2, help="rail topologies: HB domains y")
    bench.add_argument("--gpus-per-domain", type=int, default=4, help="rail topologies: GPUs per domain x")
    bench.add_argument("--hb-bw", type=positive_float, default=100.0,
                       help="rail topologies: HB link rate C_F in Mbit/s (--bw is C_S, default 10)")
    bench.add_argument("--pair-bytes", type=sizes, default=(50000,),
                       help="rail topologies: all-to-all bytes per GPU pair")
    bench.add_argument("--small-frames-first", action="store_true",
                       help="rail topologies, Mininet: shaped links send frames of at most 128 bytes (TCP ACKs) "
                            "before queued data, so TCP in both directions keeps a link busy")
    bench.add_argument("--timeout", type=positive_float, default=300.0,
                       help="seconds per collective and testbed before it counts as failed")
    add_switch_impl(bench, several=True)
    bench.set_defaults(func=cmd_bench)
    _add_named_benchmarks(bench)

    tb = sub.add_parser("testbed", help="bring a topology up with the job ready, or remove leftovers")
    tbsub = tb.add_subparsers(dest="action", required=True)
    up = tbsub.add_parser("up", help="bring up; Mininet CLI (or wait with --no-cli / on loopback) until exit")
    add_topo(up, "topology generator")
    up.add_argument("--domains", type=int, default=2, help="rail topologies: HB domains y")
    up.add_argument("--gpus-per-domain", type=int, default=4, help="rail topologies: GPUs per domain x")
    up.add_argument("--hb-bw", type=float, default=None, help="rail topologies: HB-domain link rate in Mbit/s")
    up.add_argument("--topo-file", type=input_file, default=None, help="a saved topology (JSON) instead of --topo")
    add_workers(up, 4, "star: workers")
    up.add_argument("--bw", type=float, default=None, help="(NIC) link rate in Mbit/s (Mininet)")
    up.add_argument("--delay", type=float, default=None, help="one-way link delay in ms (Mininet)")
    up.add_argument("--link-loss", type=float, default=None,
                    help="link loss in percent, each way (Mininet: netem when the kernel has it, else a "
                         "cls_bpf random drop on the host's interface)")
    up.add_argument("--mtu", type=int, default=None, help="link MTU, 576..9000 (Mininet; K follows it)")
    add_values_per_packet(up, choices=SUPPORTED_K)
    up.add_argument("--switch-loss", type=float, default=0.0, help="loopback: drop percent of switch output")
    add_backend(up)
    add_executor(up)
    up.add_argument("--no-cli", action="store_true", help="wait for Ctrl-C instead of the Mininet CLI")
    up.add_argument("--name", default=None, help="the testbed's name (default: the first free tb1, tb2, ...); "
                                                 "innet testbed status lists running testbeds by name")
    add_switch_impl(up, runtime=True)
    up.set_defaults(func=cmd_testbed_up)
    from innet.testbed.cli.live import add_status_commands

    add_status_commands(tbsub)
    for name, text in (("down", "stop live testbeds (their `up` process) and remove leftovers"),
                       ("cleanup", "remove leftovers of crashed runs (processes, interfaces)")):
        p = tbsub.add_parser(name, help=text)
        p.add_argument("--runtime", choices=["process", "docker"], default="process",
                       help="docker: remove innet-labelled containers, networks and volumes")
        if name == "down":
            p.add_argument("name", nargs="?", default=None,
                           help="stop only this testbed (innet testbed status lists them; default: every one)")
        p.set_defaults(func=cmd_testbed_down)
