"""``innet geo plan`` and ``innet geo bench``: thin calls into ``innet.testbed.geo.bench``.

Sites and WAN links are flags (``--sites a:2,b:2,c:2``, ``--wan a-b:10:40,...`` as
``SITE-SITE:Mbit/s:ms``); the defaults are ``innet.testbed.geo.topology.geo()``'s three sites and WAN classes.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from innet.argtypes import (EXIT_USAGE, Reporter, add_backend, add_out, add_switch_impl, int_range, interrupted,
                            positive_float)
from innet.argtypes import console as new_console
from innet.testbed.backends.select import resolve_backend


def _sites(text: str) -> tuple[Any, ...]:
    from innet.testbed.geo.topology import Site

    out = []
    for part in text.split(","):
        name, sep, workers = part.strip().partition(":")
        try:
            out.append(Site(name, int(workers) if sep else 2))
        except ValueError:
            raise argparse.ArgumentTypeError(f"site {part!r}: expected NAME[:WORKERS], e.g. a:2") from None
    return tuple(out)


def _wan(text: str) -> tuple[Any, ...]:
    from innet.testbed.geo.topology import Wan
    from innet.testbed.core.topology import Link, TopologyError

    out = []
    for part in text.split(","):
        fields = part.strip().split(":")
        ends = fields[0].split("-")
        try:
            if len(fields) != 3 or len(ends) != 2:
                raise ValueError
            out.append(Wan(ends[0], ends[1], Link(bw_mbps=float(fields[1]), delay_ms=float(fields[2]))))
        except (ValueError, TopologyError) as error:
            detail = f": {error}" if str(error) else ""
            raise argparse.ArgumentTypeError(f"WAN link {part!r}: expected A-B:MBITS:MS, e.g. a-b:10:40{detail}") \
                from None
    return tuple(out)


def _runs(text: str) -> tuple[tuple[str, str], ...]:
    out = []
    for part in text.split(","):
        placement, sep, comp = part.strip().partition("/")
        if not sep:
            raise argparse.ArgumentTypeError(f"run {part!r}: expected PLACEMENT/COMPRESSION, e.g. opfence/adatopk")
        out.append((placement, comp))
    return tuple(out)


def _speeds(text: str) -> tuple[tuple[str, float], ...]:
    out = []
    for part in text.split(","):
        name, sep, value = part.strip().partition(":")
        try:
            out.append((name, float(value)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"speed {part!r}: expected SITE:CPU_SHARE, e.g. b:0.25") from None
        if not sep or not name:
            raise argparse.ArgumentTypeError(f"speed {part!r}: expected SITE:CPU_SHARE, e.g. b:0.25")
        if not out[-1][1] > 0 or out[-1][1] == float("inf"):
            raise argparse.ArgumentTypeError(f"speed of site {name!r} is {value}: must be a positive number")
    return tuple(out)


def _straggler(text: str) -> tuple[str, int, float]:
    fields = text.split(":")
    try:
        if len(fields) != 3 or not fields[0]:
            raise ValueError
        site, step, share = fields[0], int(fields[1]), float(fields[2])
    except ValueError:
        raise argparse.ArgumentTypeError(f"straggler {text!r}: expected SITE:STEP:CPU_SHARE, e.g. b:50:0.1") from None
    if not share > 0 or share == float("inf"):
        raise argparse.ArgumentTypeError(f"straggler {text!r}: CPU share {fields[2]} must be a positive number")
    return site, step, share


def _rate_change(text: str) -> tuple[str, str, int, float]:
    fields = text.split(":")
    try:
        sites = fields[0].split("-")
        if len(fields) != 3 or len(sites) != 2 or not all(sites):
            raise ValueError
        step, mbps = int(fields[1]), float(fields[2])
    except ValueError:
        raise argparse.ArgumentTypeError(f"rate change {text!r}: expected SITE-SITE:STEP:MBIT_S, e.g. a-b:20:2.5") \
            from None
    if not 0 < mbps <= 1000:
        raise argparse.ArgumentTypeError(f"rate change {text!r}: {fields[2]} Mbit/s must be within (0, 1000]")
    return sites[0], sites[1], step, mbps


def _config(args: argparse.Namespace, **extra: Any) -> Any:
    from innet.testbed.geo.bench import DEFAULT_RUNS, GeoBenchConfig
    from innet.testbed.geo.topology import DEFAULT_SITES, DEFAULT_WAN, geo

    topo = geo(args.sites or DEFAULT_SITES, args.wan or DEFAULT_WAN)
    if args.torch is not None and "runs" not in extra:  # plan: no data-parallel run for torch models
        extra["runs"] = tuple(r for r in DEFAULT_RUNS if r[0] != "dp")
    return GeoBenchConfig(task=args.task, model=args.model, batch=args.batch, microbatches=args.microbatches, topology=topo,
                          layers=args.layers, width=args.width, heads=args.heads, vocab=args.vocab, seq=args.seq,
                          torch_model=args.torch, numpy_stages=args.numpy_stages, speeds=args.speeds or (),
                          **extra)


def _two_tier(text: str) -> tuple[Any, ...]:
    from innet.testbed.geo.config import GeoBenchError
    from innet.testbed.geo.plan import TwoTier

    out = []
    for part in text.split(","):
        sites, sep, groups = part.strip().partition(":")
        try:
            counts = int(sites), int(groups) if sep else 2
        except ValueError:
            raise argparse.ArgumentTypeError(f"two-tier network {part!r}: expected SITES[:GROUPS], e.g. 6:2") from None
        try:
            out.append(TwoTier(*counts))
        except GeoBenchError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        if out[-1].sites > 16:
            raise argparse.ArgumentTypeError(f"two-tier network {part!r}: {out[-1].sites} sites is above the 16 "
                                             "this planner comparison runs in seconds")
    return tuple(out)


def _stages(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(p) for p in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"stages {text!r}: expected indices such as 0 or 0,2") from None
    if any(i < 0 for i in out):
        raise argparse.ArgumentTypeError(f"stages {text!r}: indices must be >= 0")
    return out


def refusal(prog: str, error: object) -> str:
    """The one line a refused command prints: ``prog: message``, with the message's own leading
    ``geo bench`` dropped (the library's errors name the bench for callers that are not this
    command; here ``prog`` names it already)."""
    message = str(error)
    for lead in ("geo bench: ", "geo bench "):
        if message.startswith(lead):
            message = message[len(lead):]
            break
    return f"{prog}: {message}"


def _refuse(prog: str, error: object) -> None:
    print(refusal(prog, error), file=sys.stderr)


def cmd_plan(args: argparse.Namespace) -> int:
    from innet.host.geo.graph import GraphError
    from innet.host.geo.opfence import PlanError
    from innet.testbed.geo.bench import GeoBenchError, plan_all, run
    from innet.testbed.core.topology import TopologyError

    try:
        config = _config(args)
        planned = plan_all(config)
        if planned.site_speeds:
            print("measured site speeds: " + ", ".join(f"{s} {v:.2f}" for s, v in planned.site_speeds.items()))
    except (GeoBenchError, PlanError, TopologyError, GraphError) as error:
        _refuse("innet geo plan", error)
        return EXIT_USAGE
    print(config.topology)
    print("clusters (OP-Fence, by bandwidth): " + "; ".join(", ".join(c) for c in planned.clusters))
    total = sum(c.compute_s for c in planned.workload.costs)
    print(f"workload: {len(planned.graph)} operators, {total * 1e3:.2f} ms forward+backward per microbatch of "
          f"{config.batch}")
    for name, plan in planned.plans.items():
        print(plan.describe(name))
    if args.two_tier:
        from innet.testbed.geo.plan import compare_tiers, tiers_table

        try:
            print(tiers_table(compare_tiers(planned, args.two_tier, config.microbatches)))
        except PlanError as error:
            print(f"innet geo plan: --two-tier: {error}", file=sys.stderr)
            return EXIT_USAGE
    if args.measure:
        runs = tuple((p, "none") for p in planned.plans)
        doc = run(replace(config, steps=args.measure, runs=runs, eval_every=0))
        print("placement  predicted ms  measured ms (median step)")
        for r in doc.rows:
            predicted = f"{r.predicted_step_s * 1e3:12.1f}" if r.predicted_step_s is not None else f"{'-':>12}"
            print(f"{r.placement:9}  {predicted}  {r.step_s * 1e3:11.1f}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from innet.host.geo.graph import GraphError
    from innet.host.geo.opfence import PlanError
    from innet.testbed.geo import bench as geo_bench
    from innet.testbed.core.topology import TopologyError

    impls = list(args.switch_impl)
    mininet = resolve_backend(args.backend) == "mininet"
    try:
        default = tuple(r for r in geo_bench.DEFAULT_RUNS if not (args.torch and r[0] == "dp"))
        config = _config(args, steps=args.steps, runs=args.runs or default, replicas=args.replicas,
                         target_accuracy=args.target, lr=args.lr, out_dir=args.out, eval_every=args.eval_every,
                         target_loss=args.target_loss, timeout_s=args.timeout,
                         activations=args.activations, gradients=args.gradients, warmup_steps=args.warmup,
                         row_topk=not args.tensor_topk, topk_ratio=args.topk_ratio, min_ratio=args.min_ratio,
                         adatopk_max_ratio=args.adatopk_max_ratio, dp_batch=args.dp_batch,
                         topk_values=args.topk_values, reference=not args.no_reference,
                         testbed="mininet" if mininet else "loopback", switch_impl=impls[-1],
                         straggler=args.straggler, replan=args.replan, rate_change=args.rate_change,
                         straggler_threshold=args.straggler_threshold, straggler_window=args.straggler_window,
                         seed=args.seed,
                         **({"wan_ceiling_mbps": args.wan_ceiling} if args.wan_ceiling is not None else {}))
    except (geo_bench.GeoBenchError, TopologyError) as error:
        _refuse("innet geo bench", error)
        return EXIT_USAGE
    absent: dict[str, str] = {}
    if "bmv2" in impls:
        from innet.testbed.backends.bmv2 import Bmv2Error, Bmv2Missing, check_impl
        from innet.testbed.geo.mininet import wan_emulation
        from innet.testbed.geo.testbed import bmv2_wan_problem

        problem = bmv2_wan_problem(config.topology, wan_emulation("mininet"))
        try:
            check_impl("bmv2", root=os.geteuid() == 0, backend="mininet", topo="geo")
        except Bmv2Missing as missing:
            if len(impls) == 1:
                problem = problem or str(missing)
            else:  # the list form: run what is there, say what is not
                absent["bmv2"] = str(missing)
                print(f"innet geo bench: no bmv2 rows: {missing}", file=sys.stderr)
        except Bmv2Error as error:
            problem = problem or str(error)
        if problem is not None:
            _refuse("innet geo bench", problem)
            return EXIT_USAGE
    from innet.host.geo.launch import LaunchError
    from innet.testbed.core.testbed import TestbedError

    if mininet:
        from innet.testbed.backends.mininet.console import quiet_mininet

        quiet_mininet()
    try:
        docs = {}
        for impl in impls:
            if impl not in absent:
                if len(impls) > 1:
                    print(f"-- {impl} site switches --")
                with Reporter(new_console(), f"geo bench ({impl})", total=len(config.runs),
                              counts=lambda msg: msg.startswith("training "), markup=False) as report:
                    docs[impl] = geo_bench.run(replace(config, switch_impl=impl), progress=report)
                if docs[impl].partial:
                    break
        doc = geo_bench.combine(docs, absent) if len(docs) > 1 else next(iter(docs.values()))
        partial = doc.partial
    except (PlanError, GraphError, geo_bench.GeoBenchError) as error:  # GraphError: e.g. an unknown traced operator
        _refuse("innet geo bench", error)
        return EXIT_USAGE
    except (TestbedError, LaunchError) as error:
        _refuse("innet geo bench", ' '.join(str(error).split())[:2000])
        return 1
    if partial and not doc.rows:
        return interrupted("innet geo bench")  # before the first run ended: nothing to write
    print(geo_bench.table(doc))
    json_path, png_path = geo_bench.save(doc, config.out_dir)
    print(f"wrote {json_path} and {png_path}")
    if partial:
        return interrupted("innet geo bench", f"{json_path} (the runs before Ctrl-C)")
    return 0


def add_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register ``geo plan`` and ``geo bench`` on the ``innet`` parser."""
    geo = sub.add_parser("geo", help="geo-distributed training across sites (OP-DAG, OP-Fence, AdaTopK)")
    gsub = geo.add_subparsers(dest="action", required=True)
    for name, func, help_text in (
            ("plan", cmd_plan, "print the OP-Fence plan and the naive one with predicted step times"),
            ("bench", cmd_bench, "train across emulated sites: placements x compressors (JSON + PNG)")):
        p = gsub.add_parser(name, help=help_text)
        p.add_argument("--task", choices=["digits", "lm", "text"], default="digits",
                       help="digits (scikit-learn digits), lm (synthetic bigram language) or text (characters of "
                            "generated English-like sentences) (default: digits)")
        p.add_argument("--model", choices=["mlp", "resnet", "gpt", "gpt2"], default=None,
                       help="the numpy model: mlp or resnet (digits), gpt (--width/--heads/--layers) or gpt2 "
                            "(GPT-2-shaped at --width: 64-wide heads, depth from the width) (lm, text) "
                            "(default: mlp for digits, gpt for lm and text)")
        p.add_argument("--sites", type=_sites, default=None, help="sites as NAME:WORKERS,... (default a:2,b:2,c:2)")
        p.add_argument("--wan", type=_wan, default=None,
                       help="WAN links as A-B:MBITS:MS,... (default a-b:10:40,b-c:100:10,a-c:1000:2)")
        p.add_argument("--batch", type=int_range(1), default=32, help="samples per microbatch (default 32)")
        p.add_argument("--microbatches", type=int_range(1), default=4, help="microbatches per step (default 4)")
        p.add_argument("--layers", type=int_range(1, 64), default=2, help="lm: GPT blocks (default 2)")
        p.add_argument("--width", type=int_range(2, 4096), default=32, help="lm: GPT width (default 32)")
        p.add_argument("--heads", type=int_range(1, 64), default=2, help="lm: attention heads (default 2)")
        p.add_argument("--vocab", type=int_range(2, 4096), default=32, help="lm: vocabulary (default 32)")
        p.add_argument("--seq", type=int_range(1, 1024), default=16, help="lm: tokens per sequence (default 16)")
        p.add_argument("--torch", default=None, metavar="MODEL",
                       help="a PyTorch model traced with torch.fx instead of the numpy one: mlp, gpt, or "
                            "package.module:factory (returns an nn.Module giving logits)")
        p.add_argument("--numpy-stages", type=_stages, default=(), metavar="I,J",
                       help="with --torch: stages that run the numpy operators instead (heterogeneous software)")
        p.add_argument("--speeds", type=_speeds, default=None, metavar="SITE:SHARE,...",
                       help="emulated device speeds: each named site's processes limited to SHARE of one CPU "
                            "(cgroup quota; root); the speeds are then measured and OP-Fence plans with them")
        p.set_defaults(func=func)
        if name == "plan":
            p.add_argument("--measure", type=int_range(2), default=0, metavar="STEPS",
                           help="also train each plan STEPS steps and print measured vs predicted step time")
            p.add_argument("--two-tier", type=_two_tier, default=(), metavar="SITES[:GROUPS],...",
                           help="also plan the measured model on networks of SITES sites in GROUPS equal groups "
                                "(default groups 2; fast links inside a group, slow between) with OP-Fence, search "
                                "without clustering and greedy, e.g. 6:2,9:3,12:2 (default: none)")
        else:
            p.add_argument("--steps", type=int_range(2), default=100, help="training steps per run (default 100)")
            p.add_argument("--runs", type=_runs, default=None,
                           help="PLACEMENT/COMPRESSION,... placements naive|greedy|search|opfence|dp, compression "
                                "none|int8|topk|adatopk (default: dp/none,dp/int8,dp/topk,naive/none,greedy/none,"
                                "search/none,opfence/none,opfence/int8,opfence/topk,opfence/adatopk; no dp with "
                                "--torch)")
            p.add_argument("--replicas", type=int_range(1, 9), default=1,
                           help="pipelines per site; > 1: data parallel inside each site via its innet switch")
            p.add_argument("--target", type=positive_float, default=0.9, help="time-to-accuracy target (default 0.9)")
            p.add_argument("--target-loss", type=positive_float, default=None,
                           help="also report the time to this test loss (nats)")
            p.add_argument("--timeout", type=positive_float, default=600.0,
                           help="seconds a run may take before its stages are stopped (default 600)")
            p.add_argument("--warmup", type=int_range(0), default=10,
                           help="top-k links send int8 per row for the first N steps (default 10)")
            p.add_argument("--topk-ratio", type=positive_float, default=0.28125,
                           help="share of each row top-k runs keep (default 0.28125: 9 of 32 columns)")
            p.add_argument("--dp-batch", type=int_range(1), default=None,
                           help="samples per microbatch on each data-parallel site (default: --batch; "
                                "--batch / sites gives data parallel the pipelines' global batch)")
            p.add_argument("--adatopk-max-ratio", type=positive_float, default=None,
                           help="AdaTopK's cap on its ratio (default 1: a link fast enough for the dense message "
                                "sends dense, a slower one as many columns as cross in time)")
            p.add_argument("--min-ratio", type=positive_float, default=None,
                           help="AdaTopK's floor (default: --topk-ratio; at 0.25 the language model ended 0.05 "
                                "above dense over 3 seeds, at 0.28125 0.03 below)")
            p.add_argument("--topk-values", choices=("int8", "int8-bf16", "fp32"), default="int8-bf16",
                           help="top-k values as int8 with a bfloat16 scale per row (int8-bf16, default), a float32 "
                                "one (int8) or fp32")
            p.add_argument("--activations", choices=("topk", "int8-fit"), default="topk",
                           help="top-k runs send activations as top-k (default), or int8 per row where that fits "
                                "top-k's bytes (int8-fit; needs --gradients topk or int8)")
            p.add_argument("--gradients", choices=("masked", "topk", "int8", "int4"), default="int4",
                           help="top-k runs send gradients as int4 per row with a bfloat16 scale (int4, default), "
                                "int8 per row, top-k at the ratio (these three with error feedback) or only at the "
                                "forward top-k's columns (masked)")
            p.add_argument("--no-reference", action="store_true",
                           help="lm: sparsify activations themselves, not their deviation from a per-token "
                                "reference row both link ends keep")
            p.add_argument("--tensor-topk", action="store_true",
                           help="top-k over whole activation tensors (default: per row, i.e. per token/sample; "
                                "needs --gradients topk or int8)")
            p.add_argument("--straggler", type=_straggler, default=None, metavar="SITE:STEP:SHARE",
                           help="tighten SITE's CPU quota to SHARE after STEP (a device slowing mid-run; root)")
            p.add_argument("--rate-change", type=_rate_change, default=None, metavar="A-B:STEP:MBIT_S",
                           help="set the WAN link between sites A and B to MBIT_S after STEP (tc; --backend mininet): "
                                "AdaTopK's ratio follows the measured rate")
            p.add_argument("--straggler-threshold", type=positive_float, default=1.5,
                           help="online detection: a stage is a straggler when its median compute over the last "
                                "window exceeds this factor of its first window's (default 1.5)")
            p.add_argument("--straggler-window", type=int_range(1), default=5,
                           help="steps in the straggler detector's windows (default 5)")
            p.add_argument("--replan", action="store_true",
                           help="with --straggler: re-plan once, when a straggler is detected online, from its "
                                "measured speed (the stages restart from their parameters and momentum on the new plan)")
            p.add_argument("--wan-ceiling", type=positive_float, default=None, metavar="MBIT_S",
                           help="mininet: the highest WAN rate this machine carries (default: the measured "
                                "ceiling in innet.testbed.geo.topology); WAN links above it are refused")
            p.add_argument("--lr", type=positive_float, default=0.05, help="SGD learning rate (default 0.05)")
            p.add_argument("--eval-every", type=int_range(1), default=5, help="evaluate every N steps (default 5)")
            p.add_argument("--seed", type=int_range(0, 2**31 - 1), default=0,
                           help="seed of the parameters' initialisation and the data order, the same for every run "
                                "(the task and its test set stay the same across seeds) (default 0)")
            add_backend(p, default="loopback",
                        note="; mininet: a switch per site, stages on site hosts, WAN veths shaped by HTB "
                             "(delay: netem, else the transport)")
            add_out(p)
            add_switch_impl(p, several=True, note="; bmv2 needs --backend mininet")
