"""``innet model cost|collectives|iteration|sweep|traffic``: the rail models as tables, JSON and PNG.

Every subcommand is a thin call into the model modules; a value the models reject (a domain
size that does not divide the GPU count, a zero bandwidth, a radix below 2, ...) is one line
on stderr naming it, exit status 2, with no usage block and no traceback.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

from innet.argtypes import CommandParser, Reporter, output_dir, sizes

EXIT_USAGE = 2


class OneLineArgumentParser(CommandParser):
    """A bad argument is one line (``innet model X: error: ...``), exit 2, no usage block."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _number(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """argparse type that only parses (range checks belong to the models, which name the field)."""

    def convert(text: str) -> Any:
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'a number' if kind is float else 'an integer'}") from None

    convert.__name__ = kind.__name__
    return convert


_int, _float = _number(int), _number(float)


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.split(",") if v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None


def _console() -> Any:
    from rich.console import Console

    return Console(width=200) if not Console().is_terminal else Console()


def cmd_model(args: argparse.Namespace) -> int:
    from innet.testbed.rail.models import report
    from innet.testbed.rail.models.railperf import ModelError

    console = _console()
    try:
        doc = _run(args, console)
    except ModelError as error:
        print(f"innet model {args.model}: {error}", file=sys.stderr)
        return EXIT_USAGE
    stem = f"model-{args.model}" + (f"-{args.sweep}" if args.model == "sweep" else "")
    paths = report.save(doc, args.out, stem)
    console.print("wrote " + " and ".join(str(p) for p in paths))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    """``innet model reproduce``: every claim of the paper, computed now, as a table, JSON and PNGs."""
    from innet.testbed.rail.models import reproduce, report
    from innet.testbed.rail.models.railperf import ModelError

    console = _console()
    # a few seconds: a bar (terminal only) that counts the stages started
    with Reporter(console, "model reproduce", total=7, counts=lambda _: True, markup=False) as progress:
        try:
            names = ("before", "after") if args.setting == "both" else (args.setting,)
            chosen = [reproduce.with_overrides(reproduce.settings_by_name(n), hb_efficiency=args.hb_efficiency,
                                               tp_overlap=args.tp_overlap) for n in names]
            progress("the paper's claims")
            rows = {s.name: reproduce.reproduce(s, with_guesses=not args.no_guesses) for s in chosen}
        except ModelError as error:
            print(f"innet model reproduce: {error}", file=sys.stderr)
            return EXIT_USAGE
        progress("figure curves")
        curves = {s.name: reproduce.figure_curves(s) for s in chosen}
        progress("out-of-sample validation")
        validation = {s.name: reproduce.out_of_sample(s) for s in chosen}
        progress("MoE")
        moe = {s.name: reproduce.moe_section(s) for s in chosen}
        progress("Table II")
        table2 = {s.name: reproduce.table2_rows(s) for s in chosen}
        progress("model alternatives")
        alternatives = reproduce.model_alternatives(chosen[-1])
        done = reproduce.Reproduction(tuple(chosen), {n: tuple(r) for n, r in rows.items()}, curves, validation,
                                      {n: tuple(r) for n, r in moe.items()}, {n: tuple(r) for n, r in table2.items()},
                                      tuple(alternatives))
        progress("figures")
        paths = report.save_reproduction(done, args.out)
    console.print(report.reproduction_table(done))
    last = chosen[-1]
    console.print(report.table2_rows_table(table2[last.name], "peak" if last.peak_power else "typical"))
    console.print(report.out_of_sample_table(validation))
    console.print(report.moe_table(moe[chosen[-1].name]))
    console.print(report.alternatives_table(alternatives, chosen[-1].name))
    console.print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def _run(args: argparse.Namespace, console: Any) -> dict[str, Any]:
    from innet.testbed.rail.models import netcost, railperf, report

    if args.model == "cost":
        base = netcost.PEAK_PARTS if args.power == "peak" else netcost.PUBLIC_PARTS
        parts = netcost.Parts(args.switch_usd / 64, (base.switch_w(64) if args.switch_w is None else args.switch_w) / 64,
                              args.transceiver_usd, args.transceiver_w,
                              switch_power_includes_optics=base.switch_power_includes_optics)
        clusters = (netcost.TABLE2_CLUSTERS if args.gpus is None else
                    (netcost.Cluster(args.gpus, args.gpus_per_domain, args.radix),))
        rows = report.cost_rows(clusters, parts)
        console.print(report.cost_table(rows, parts))
        console.print(report.cost_ranges(rows))
        return {"model": "cost", "parts": asdict(parts), "paper": netcost.PAPER_TABLE2,
                "rows": [r.to_json() for r in rows]}
    if args.model == "collectives":
        grid = railperf.Grid(args.gpus_per_domain, args.domains, args.c_s * 1e9, args.c_f * 1e9)
        perf = report.perf_rows(grid, args.sizes)
        console.print(report.perf_table(grid, perf))
        return {"model": "collectives", "grid": asdict(grid), "rows": [r.to_json() for r in perf]}
    if args.model == "iteration":
        return _iteration(args, console)
    if args.model == "traffic":
        return _traffic(args, console)
    return _sweep(args, console)


def _iteration(args: argparse.Namespace, console: Any) -> dict[str, Any]:
    from innet.testbed.rail.models import iteration, report, reproduce
    from innet.testbed.rail.models.gpt import model_by_name

    setting = reproduce.DEFAULT
    rows = report.validation_rows(setting.hb_efficiency)
    console.print(report.validation_table(rows))
    options = {**dict(setting.platform_options()), **_variants(args)}
    doc: dict[str, Any] = {"model": "iteration", "setting": setting.name, "efficiency": options["efficiency"],
                           "hb_efficiency": setting.hb_efficiency, "variants": _variants(args),
                           "validation": [r.to_json() for r in rows]}
    if args.gpt is not None:
        model = model_by_name(args.gpt)
        gpu = {"h100": iteration.H100, "a100": iteration.A100}[args.gpu]
        configs = []
        for network in iteration.NETWORKS:
            platform = iteration.Platform(gpu, args.gpus, args.hb_size, args.c_f * 1e9, args.c_s * 1e9, network,
                                          **options)
            if args.tp is None:
                par, r = iteration.best(model, platform, args.batch)
            else:
                par = iteration.Parallelism(args.tp, args.pp, args.dp, args.microbatch, args.interleave)
                r = iteration.iteration(model, platform, par, args.batch)
            configs.append(iteration.IterationResult(network, par, r))
        console.print(report.breakdown_table(args, configs))
        doc["configuration"] = {"gpt": args.gpt, "gpu": args.gpu, "gpus": args.gpus, "hb_size": args.hb_size,
                                "c_f_bps": args.c_f * 1e9, "c_s_bps": args.c_s * 1e9, "batch": args.batch,
                                "results": [c.to_json() for c in configs]}
    return doc


def _traffic(args: argparse.Namespace, console: Any) -> dict[str, Any]:
    from innet.testbed.rail.models import iteration, report, traffic
    from innet.testbed.rail.models.gpt import model_by_name

    par = iteration.Parallelism(args.tp, args.pp, args.dp, args.microbatch)
    gpt = traffic.megatron(model_by_name(args.gpt), par, args.batch, args.hb_size, tp_scheme=args.tp_scheme)
    moe = traffic.moe(traffic.MOE_1_3B, args.moe_gpus, args.moe_batch, args.moe_hb_size)
    summaries = {"megatron": traffic.summary(gpt), "moe": traffic.summary(moe)}
    console.print(report.traffic_table(summaries))
    return {"model": "traffic", "megatron": {"gpt": args.gpt, "split": asdict(par), "batch": args.batch,
                                             "tp_scheme": args.tp_scheme},
            "moe": {"model": asdict(traffic.MOE_1_3B), "gpus": args.moe_gpus, "batch": args.moe_batch},
            "summary": summaries, "_matrices": {"megatron": gpt, "moe": moe}}


def _sweep(args: argparse.Namespace, console: Any) -> dict[str, Any]:
    from innet.testbed.rail.models import report, reproduce, sweeps

    options = {**dict(reproduce.DEFAULT.platform_options()), **_variants(args)}
    rows: Sequence[sweeps.SweepRow]
    if args.sweep == "hb-size":
        for n in args.gpus:
            sweeps.check_sweep_args(n, args.batch)
        rows = sweeps.hb_size_sweep(tuple(args.gpt), tuple(args.gpus), args.batch, **options)
    elif args.sweep == "bandwidth":
        sweeps.check_sweep_args(args.gpus[0], args.batch)
        rows = sweeps.bandwidth_sweep(args.gpt[0], args.gpus[0], args.batch, **options)
    elif args.sweep == "batch":
        sweeps.check_sweep_args(args.gpus[0], 1)
        rows = sweeps.batch_sweep(args.gpt[0], args.gpus[0], tuple(args.batches), **options)
    else:
        from innet.testbed.rail.models import netcost

        parts = reproduce.default_parts()
        clusters = [c.cluster for c in netcost.sweep(tuple(args.gpus), tuple(args.radix), tuple(args.hb_size), parts)]
        costs = report.cost_rows(clusters, parts)
        console.print(report.cost_sweep_table(costs))
        return {"model": "sweep", "sweep": args.sweep, "variants": _variants(args),
                "rows": [r.to_json() for r in costs]}
    console.print(report.sweep_table(args.sweep, rows))
    return {"model": "sweep", "sweep": args.sweep, "variants": _variants(args), "rows": [r.to_json() for r in rows]}


def _variants(args: argparse.Namespace) -> dict[str, Any]:
    """Platform options of ``--hb-tiers`` and ``--megatron-2021``."""
    from innet.testbed.rail.models import sweeps

    return {**(sweeps.GH200_TIERS if getattr(args, "hb_tiers", False) else {}),
            **(sweeps.MEGATRON_2021 if getattr(args, "megatron_2021", False) else {})}


def _add_variants(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hb-tiers", action="store_true",
                        help="HB domains as DGX GH200's two NVSwitch tiers: 8-GPU boards joined at half the NVLink "
                             "rate (default: one flat fabric, the paper's reading; K = N stays flat)")
    parser.add_argument("--megatron-2021", action="store_true",
                        help="Megatron-LM 2021's schedule: gradients reduced after the backward pass, blocking "
                             "pipeline sends (default: both overlapped)")


def _add_cost(msub: Any) -> None:
    from innet.testbed.rail.models.netcost import PUBLIC_PARTS

    cost = msub.add_parser("cost", help="Table II: switch/transceiver counts, cost and power of both designs")
    cost.add_argument("--gpus", type=_int, default=None, help="cluster size N (default: the Table II grid)")
    cost.add_argument("--gpus-per-domain", "--hb-size", type=_int, default=8, help="HB domain size K (default 8)")
    cost.add_argument("--radix", type=_int, default=64, help="switch ports k (default 64)")
    cost.add_argument("--switch-usd", type=_float, default=PUBLIC_PARTS.switch_usd(64),
                      help="price of a 64-port switch (scaled per port for other radices)")
    cost.add_argument("--power", choices=("peak", "typical"), default="peak",
                      help="switch power: peak (QM9700 maximum with its optics, as 'innet model reproduce') "
                           "or typical without optics (default peak)")
    cost.add_argument("--switch-w", type=_float, default=None,
                      help="watts of a 64-port switch (default: by --power)")
    cost.add_argument("--transceiver-usd", type=_float, default=PUBLIC_PARTS.transceiver_usd,
                      help="price per transceiver (link end)")
    cost.add_argument("--transceiver-w", type=_float, default=PUBLIC_PARTS.transceiver_w, help="watts per transceiver")
    cost.set_defaults(func=cmd_model)


def _add_iteration(msub: Any) -> None:
    from innet.testbed.rail.models.gpt import MODELS

    it = msub.add_parser("iteration", help="GPT iteration time and HFU (validation table; --gpt: one configuration)")
    it.add_argument("--gpt", choices=sorted(MODELS), default=None, help="model to run on a cluster (default: none)")
    it.add_argument("--gpu", choices=("h100", "a100"), default="h100", help="GPU of the cluster")
    it.add_argument("--gpus", type=_int, default=32768, help="N (default 32768)")
    it.add_argument("--hb-size", type=_int, default=8, help="HB domain size K (default 8)")
    it.add_argument("--c-f", type=_float, default=3600.0, help="HB Gbit/s per GPU (default 3600)")
    it.add_argument("--c-s", type=_float, default=400.0, help="NIC Gbit/s per GPU (default 400)")
    it.add_argument("--batch", type=_int, default=4096, help="global batch in sequences (default 4096)")
    for name in ("tp", "pp", "dp"):
        it.add_argument(f"--{name}", type=_int, default=None, help=f"{name} degree (default: best split)")
    it.add_argument("--microbatch", type=_int, default=1, help="sequences per microbatch")
    it.add_argument("--interleave", type=_int, default=1, help="pipeline stages per GPU (interleaved schedule)")
    _add_variants(it)
    it.set_defaults(func=cmd_model)


def _add_traffic(msub: Any) -> None:
    from innet.testbed.rail.models.reproduce import DEFAULT
    from innet.testbed.rail.models.traffic import TP_SCHEMES

    tr = msub.add_parser("traffic", help="per-GPU-pair traffic of Megatron GPT and of MoE (heatmaps + shares)")
    tr.add_argument("--gpt", default="gpt-1t", help="GPT model (default gpt-1t)")
    tr.add_argument("--tp", type=_int, default=8, help="tensor-parallel degree")
    tr.add_argument("--pp", type=_int, default=64, help="pipeline-parallel degree")
    tr.add_argument("--dp", type=_int, default=6, help="data-parallel degree")
    tr.add_argument("--microbatch", type=_int, default=1, help="sequences per microbatch")
    tr.add_argument("--batch", type=_int, default=3072, help="global batch (default 3072, Megatron's 1T run)")
    tr.add_argument("--hb-size", type=_int, default=8, help="HB domain size K")
    tr.add_argument("--tp-scheme", choices=sorted(TP_SCHEMES), default=DEFAULT.tp_scheme,
                    help=f"how TP traffic is counted (default {DEFAULT.tp_scheme}, as 'innet model reproduce')")
    tr.add_argument("--moe-gpus", type=_int, default=128, help="GPUs of the MoE model")
    tr.add_argument("--moe-batch", type=_int, default=512, help="global batch of the MoE model")
    tr.add_argument("--moe-hb-size", type=_int, default=8, help="HB domain size of the MoE cluster")
    tr.set_defaults(func=cmd_model)


def _add_sweep(msub: Any) -> None:
    from innet.testbed.rail.models import netcost, sweeps

    sw = msub.add_parser("sweep", help="figures 8-10 (hb-size, bandwidth, batch) and the cost sweep (cost)")
    ssub = sw.add_subparsers(dest="sweep", required=True, parser_class=OneLineArgumentParser)
    specs = {
        "hb-size": ("figure 8: iteration time against the HB domain size", sweeps.FIG8_GPUS, sweeps.FIG8_MODELS),
        "bandwidth": ("figure 9: HB vs NIC bandwidth (GPT-1T)", (sweeps.FIG9_GPUS,), ("gpt-1t",)),
        "batch": ("figure 10: global batch vs HB domain size (GPT-1T)", (sweeps.FIG10_GPUS,), ("gpt-1t",)),
        "cost": ("network cost and power over cluster size and radix", (1024, 2048, 4096, 8192, 16384, 32768,
                                                                       65536, 131072), ()),
    }
    for name, (text, gpus, models) in specs.items():
        p = ssub.add_parser(name, help=text)
        p.add_argument("--gpus", type=_ints, default=gpus, help=f"cluster sizes (default {','.join(map(str, gpus))})")
        if name == "cost":
            p.add_argument("--radix", type=_ints, default=netcost.TABLE2_RADIX, help="switch radices, comma-separated")
            p.add_argument("--hb-size", type=_ints, default=netcost.TABLE2_DOMAINS,
                           help="HB domain sizes, comma-separated")
        else:
            p.add_argument("--gpt", type=lambda s: tuple(s.split(",")), default=models, help="models")
            if name == "batch":
                p.add_argument("--batches", type=_ints, default=sweeps.FIG10_BATCHES,
                               help="global batches, comma-separated")
            else:
                p.add_argument("--batch", type=_int, default=sweeps.DEFAULT_BATCH, help="global batch in sequences")
            _add_variants(p)
        p.add_argument("--out", type=output_dir, default=Path("results"), help="output directory (default results/)")
        p.set_defaults(func=cmd_model)


def add_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register ``model`` on the ``innet`` parser."""
    model = sub.add_parser("model", help="analytical models of rail-only vs rail-optimized networks")
    msub = model.add_subparsers(dest="model", required=True, parser_class=OneLineArgumentParser)
    _add_cost(msub)
    coll = msub.add_parser("collectives", help="all-to-all and allreduce completion times of both designs")
    coll.add_argument("--gpus-per-domain", "-x", type=_int, default=8, help="x (default 8)")
    coll.add_argument("--domains", "-y", type=_int, default=8, help="y (default 8)")
    coll.add_argument("--c-s", type=_float, default=400.0, help="NIC Gbit/s per GPU (default 400)")
    coll.add_argument("--c-f", type=_float, default=3600.0, help="HB Gbit/s per GPU (default 3600)")
    coll.add_argument("--sizes", type=sizes, default=(1 << 20, 16 << 20, 256 << 20),
                      help="bytes, e.g. 1M,16M (default 1M,16M,256M)")
    coll.set_defaults(func=cmd_model)
    _add_iteration(msub)
    _add_traffic(msub)
    _add_sweep(msub)
    rep = msub.add_parser("reproduce", help="every quantitative claim of the paper beside innet's number "
                                            "(table, reproduce.json, one PNG per figure)")
    rep.add_argument("--setting", choices=("before", "after", "both"), default="both",
                     help="model settings: before (NVLink 0.6, typical power, ...), after (cited fixes), both")
    rep.add_argument("--hb-efficiency", type=_float, default=None, help="override the NVLink efficiency (0-1]")
    rep.add_argument("--tp-overlap", type=_float, default=None, help="override the TP overlap fraction [0, 1]")
    rep.add_argument("--no-guesses", action="store_true", help="skip recomputing rows under the guesses' alternatives")
    rep.set_defaults(func=cmd_reproduce)
    for name, p in msub.choices.items():
        if name != "sweep":
            p.add_argument("--out", type=output_dir, default=Path("results"), help="output directory (default results/)")
