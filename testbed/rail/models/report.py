"""Tables, JSON and PNG of the rail models (what ``innet model`` prints and saves).

Why one module: every ``innet model`` subcommand prints a rich table and saves the same
document as JSON and as a matplotlib (Agg) figure; keeping the rendering here keeps the
model modules free of presentation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from innet.testbed.rail.models import iteration, netcost, railperf, sweeps
from innet.testbed.rail.models.records import (Alternative, CostRow, FittedRunRow, MoeRow, OutOfSample,
                                               PerfRow, Table2Row)

if TYPE_CHECKING:
    from innet.testbed.rail.models.reproduce import Reproduction


def cost_rows(clusters: Sequence[netcost.Cluster], parts: netcost.Parts) -> list[CostRow]:
    """One row per cluster: counts per tier, cost and power of both networks and the savings."""
    rows = []
    for cluster in clusters:
        c = netcost.compare(cluster, parts)
        rows.append(CostRow(cluster.gpus, cluster.gpus_per_domain, cluster.radix, c.rail_optimized, c.rail_only,
                            c.cost_saving, c.power_saving, c.cost_saving_usd, c.power_saving_w))
    return rows


def cost_table(rows: Sequence[CostRow], parts: netcost.Parts) -> Any:
    from rich.table import Table

    table = Table(title=f"Network cost and power (switch ${parts.switch_usd_per_port:,.1f}/port, "
                        f"{parts.switch_w_per_port:.2f} W/port; transceiver ${parts.transceiver_usd:,.0f}, "
                        f"{parts.transceiver_w:g} W)")
    for col in ("GPUs", "K", "radix", "switches per tier RO", "switches per tier R", "transceivers RO/R",
                "cost RO/R ($M)", "power RO/R (MW)", "cost saving", "power saving", "saved $M", "saved MW"):
        table.add_column(col, justify="right")
    for r in rows:
        ro, ronly = r.rail_optimized, r.rail_only
        table.add_row(str(r.gpus), str(r.gpus_per_domain), str(r.radix),
                      "/".join(map(str, ro.switches_per_tier)), "/".join(map(str, ronly.switches_per_tier)),
                      f"{ro.transceivers}/{ronly.transceivers}",
                      f"{ro.cost_usd / 1e6:.1f}/{ronly.cost_usd / 1e6:.1f}",
                      f"{ro.power_w / 1e6:.2f}/{ronly.power_w / 1e6:.2f}",
                      f"{r.cost_saving:.1%}", f"{r.power_saving:.1%}",
                      f"{r.cost_saving_usd / 1e6:.0f}", f"{r.power_saving_w / 1e6:.2f}")
    return table


def cost_ranges(rows: Sequence[CostRow]) -> str:
    """The savings range over the rows with a saving, beside the paper's."""
    saving = [r for r in rows if r.cost_saving > 0]
    if not saving:
        return "no row saves anything (rail-only needs as many tiers as rail-optimized)"
    p = netcost.PAPER_TABLE2

    def rng(key: str, scale: float, fmt: str) -> str:
        lo, hi = min(getattr(r, key) for r in saving), max(getattr(r, key) for r in saving)
        return (f"{fmt.format(lo * scale)}-{fmt.format(hi * scale)} "
                f"(paper {fmt.format(p[key][0] * scale)}-{fmt.format(p[key][1] * scale)})")

    return (f"rows with a saving: {len(saving)} of {len(rows)}; cost {rng('cost_saving', 100, '{:.0f}%')}, "
            f"power {rng('power_saving', 100, '{:.0f}%')}, ${rng('cost_saving_usd', 1e-6, '{:.0f}M')}, "
            f"{rng('power_saving_w', 1e-6, '{:.1f} MW')}")


def perf_rows(grid: railperf.Grid, sizes: Sequence[int]) -> list[PerfRow]:
    """Per size: all-to-all (``size`` bytes per GPU pair) and allreduce (``size`` bytes per GPU)."""
    return [PerfRow(bytes=s, **{f"a2a_{k}": v for k, v in railperf.alltoall_table(grid, s).items()},
                    **{f"allreduce_{k}": v for k, v in railperf.allreduce_table(grid, s).items()}) for s in sizes]


def perf_table(grid: railperf.Grid, rows: Sequence[PerfRow]) -> Any:
    from rich.table import Table

    table = Table(title=f"x={grid.x} GPUs per domain, y={grid.y} domains, C_S={grid.c_s_bps / 1e9:g} Gbit/s, "
                        f"C_F={grid.c_f_bps / 1e9:g} Gbit/s")
    for col in ("bytes", "a2a rail-opt (ms)", "a2a rail-only (ms)", "slowdown", "C_S/C_F",
                "AR hier. INA (ms)", "AR hier. ring (ms)", "AR flat INA (ms)", "AR flat ring (ms)"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r.bytes), f"{r.a2a_rail_optimized_s * 1e3:.3f}", f"{r.a2a_rail_only_s * 1e3:.3f}",
                      f"{r.a2a_slowdown:.1%}", f"{r.a2a_seed_estimate:.1%}",
                      f"{r.allreduce_hierarchical_ina_s * 1e3:.3f}",
                      f"{r.allreduce_hierarchical_ring_s * 1e3:.3f}",
                      f"{r.allreduce_flat_ina_s * 1e3:.3f}", f"{r.allreduce_flat_ring_s * 1e3:.3f}")
    return table


def validation_rows(hb_efficiency: float = iteration.HB_EFFICIENCY) -> list[FittedRunRow]:
    """The model against the published runs, with the error of the in-sample fit and of a
    leave-one-out fit (efficiency fitted on the other three runs), both with NVLink at
    ``hb_efficiency`` of its rate (the efficiency is refitted for it, never copied)."""
    efficiency = iteration.calibrate(hb_efficiency=hb_efficiency)
    rows = []
    for i, row in enumerate(iteration.validation_rows(efficiency, hb_efficiency)):
        others = [r for j, r in enumerate(iteration.VALIDATION) if j != i]
        loo = iteration.validation_rows(iteration.calibrate(others, hb_efficiency), hb_efficiency)[i].error
        rows.append(FittedRunRow(**vars(row), efficiency=efficiency, loo_error=loo,
                                 paper_error=PAPER_FIG7_ERROR.get(row.model)))
    return rows


PAPER_FIG7_ERROR = {"gpt-1t": 0.018, "gpt-22b": 0.108}
"""The Rail-only paper's HFU errors (section V-A)."""


def validation_table(rows: Sequence[FittedRunRow]) -> Any:
    from rich.table import Table

    efficiency = rows[0].efficiency if rows else iteration.FITTED_EFFICIENCY
    table = Table(title=f"Iteration model vs Korthikanti et al. 2022 (DGX A100, efficiency "
                        f"{efficiency:.3f} fitted on the four runs)")
    for col in ("model", "GPUs", "published s", "model s", "published HFU", "model HFU", "error",
                "leave-one-out error", "paper's error"):
        table.add_column(col, justify="right")
    for r in rows:
        pe = r.paper_error
        table.add_row(str(r.model), str(r.gpus), f"{r.published_s:.2f}", f"{r.model_s:.2f}",
                      f"{r.published_hfu:.1%}", f"{r.model_hfu:.1%}", f"{r.error:+.1%}",
                      f"{r.loo_error:+.1%}", "-" if pe is None else f"{pe:.1%}")
    return table


def breakdown_table(args: Any, configs: Sequence[iteration.IterationResult]) -> Any:
    from rich.table import Table

    table = Table(title=f"{args.gpt} on {args.gpus} {args.gpu.upper()} GPUs, K={args.hb_size}, C_F={args.c_f:g} "
                        f"Gbit/s, C_S={args.c_s:g} Gbit/s, batch {args.batch}")
    for col in ("network", "tp/pp/dp/b/v", "compute s", "bubble s", "TP s", "PP s", "DP s", "optimizer s",
                "iteration s", "HFU", "MFU", "memory GB"):
        table.add_column(col, justify="right")
    for c in configs:
        s, b = c.split, c.breakdown
        table.add_row(c.network, f"{s.tp}/{s.pp}/{s.dp}/{s.microbatch}/{s.interleave}",
                      *(f"{getattr(b, k):.3f}" for k in ("compute", "bubble", "tensor", "pipeline", "data",
                                                         "optimizer", "total")),
                      f"{b.hfu:.1%}", f"{b.mfu:.1%}", f"{b.memory_bytes / 1e9:.1f}")
    return table


def traffic_table(summaries: dict[str, dict[str, float]]) -> Any:
    from rich.table import Table

    table = Table(title="Traffic of one iteration (shares of bytes unless said)")
    table.add_column("quantity")
    table.add_column("paper", justify="right")
    for name in summaries:
        table.add_column(name, justify="right")
    lines = (("GPUs", "gpus", None, "{:.0f}"), ("idle GPU pairs", "idle_pairs", "> 99%", "{:.2%}"),
             ("pairs with TP traffic", "tp_pairs", "< 0.04%", "{:.3%}"), ("TP share", "tp_share", ">= 75%", "{:.1%}"),
             ("TP bytes inside the HB domain", "tp_hb_share", "100%", "{:.1%}"), ("PP share", "pp_share", None, "{:.2%}"),
             ("DP share", "dp_share", None, "{:.2%}"), ("DP bytes inside the HB domain", "dp_hb_share", None, "{:.1%}"),
             ("all-to-all share", "a2a_share", "27% (MoE)", "{:.1%}"), ("bytes inside the HB domain", "hb_share", None,
                                                                        "{:.1%}"),
             ("NIC bytes that stay on one rail", "nic_in_rail_share", "100% (GPT)", "{:.1%}"))
    for label, key, paper, fmt in lines:
        table.add_row(label, paper or "", *(fmt.format(s[key]) if key in s else "-" for s in summaries.values()))
    return table


def _pct(v: Any) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def cost_sweep_table(rows: Sequence[CostRow]) -> Any:
    """``innet model sweep cost``: rail-only's savings over cluster size, radix and K."""
    from rich.table import Table

    table = Table(title="Cost and power saving of rail-only over cluster size and radix")
    for col in ("K", "radix", "GPUs", "tiers RO/R", "cost saving", "power saving", "saved $M", "saved MW"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r.gpus_per_domain), str(r.radix), str(r.gpus),
                      f"{r.rail_optimized.tiers}/{r.rail_only.tiers}", f"{r.cost_saving:.1%}",
                      f"{r.power_saving:.1%}", f"{r.cost_saving_usd / 1e6:.0f}",
                      f"{r.power_saving_w / 1e6:.2f}")
    return table


def sweep_table(kind: str, rows: Sequence[sweeps.SweepRow]) -> Any:
    """Figures 8-10 (``kind`` hb-size, bandwidth or batch) from the rows :mod:`sweeps` gives."""
    from rich.table import Table

    table = Table(title={"hb-size": "Figure 8: iteration time against the HB domain size K",
                         "bandwidth": "Figure 9: HB and NIC bandwidth (GPT-1T)",
                         "batch": "Figure 10: global batch and K (GPT-1T)"}[kind])
    label = "vs ideal" if kind == "hb-size" else "relative to ideal"
    for col in (("K", "varied", "Gbit/s", "iteration s", "tp/pp/dp/b/v", "time saved by 4x", "speedup from 4x",
                 "paper") if kind == "bandwidth"
                else ("model", "GPUs", "batch", "K", "iteration s", "tp/pp/dp/b/v", label, "paper")):
        table.add_column(col, justify="right")
    for r in rows:
        if isinstance(r, sweeps.BandwidthGain):
            table.add_row(str(r.hb_size), r.vary, "x4", "", "", _pct(r.gain_x4), _pct(r.speedup_x4),
                          _pct(r.paper_gain_x4))
        elif isinstance(r, sweeps.BandwidthRow):
            table.add_row(str(r.hb_size), r.vary, f"{r.bps / 1e9:g}", f"{r.seconds:.3f}", "/".join(map(str, r.split)),
                          "", "", "")
        else:
            value, paper = ((f"{r.slowdown:+.1%}", r.paper_slowdown) if isinstance(r, sweeps.HbSizeRow)
                            else (f"{r.relative:.1%}", r.paper_relative))
            table.add_row(r.model, str(r.gpus), str(r.batch), str(r.hb_size), f"{r.seconds:.3f}",
                          "/".join(map(str, r.split)), value, _pct(paper))
    return table


def _plot_cost(ax: Any, rows: list[dict[str, Any]]) -> None:
    # one short item per line: "16k K=256" on one line is wider than a cluster's slot
    labels = [f"{r['gpus'] // 1024}k\nK={r['gpus_per_domain']}\nk={r['radix']}" for r in rows]
    pos = range(len(labels))
    ax.bar([p - 0.2 for p in pos], [100 * r["cost_saving"] for r in rows], 0.4, label="cost")
    ax.bar([p + 0.2 for p in pos], [100 * r["power_saving"] for r in rows], 0.4, label="power")
    for y in (38, 77):
        ax.axhline(y, color="grey", lw=0.8, ls="--")
    ax.set_xticks(list(pos), labels, fontsize=7)
    ax.set_xlabel("cluster: GPUs N, HB domain K, switch radix k")
    ax.set_ylabel("rail-only saving vs rail-optimized (%)")
    ax.set_title("Table II clusters (dashed: the paper's 38% and 77%)")


def _plot_collectives(ax: Any, doc: dict[str, Any]) -> None:
    sizes = [r["bytes"] for r in doc["rows"]]
    for key, label in (("a2a_rail_optimized_s", "all-to-all, rail-optimized"),
                       ("a2a_rail_only_s", "all-to-all, rail-only (2-step)"),
                       ("allreduce_hierarchical_ina_s", "allreduce, hierarchical INA"),
                       ("allreduce_hierarchical_ring_s", "allreduce, hierarchical ring"),
                       ("allreduce_flat_ina_s", "allreduce, flat INA (spine)")):
        ax.plot(sizes, [r[key] * 1e3 for r in doc["rows"]], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bytes (per GPU pair for all-to-all, per GPU for allreduce)")
    ax.set_ylabel("completion time (ms)")
    g = doc["grid"]
    ax.set_title(f"x={g['gpus_per_domain']}, y={g['domains']}, C_S={g['c_s_bps'] / 1e9:g} Gbit/s, "
                 f"C_F={g['c_f_bps'] / 1e9:g} Gbit/s")


def _plot_sweep(plt: Any, doc: dict[str, Any]) -> Any:
    rows, kind = doc["rows"], doc["sweep"]
    if kind == "hb-size":
        series = sorted({(r["model"], r["gpus"]) for r in rows})
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for model, n in series:
            pts = [r for r in rows if r["model"] == model and r["gpus"] == n]
            ax.plot([r["hb_size"] for r in pts], [r["seconds"] for r in pts], marker="o", ms=3, label=f"{model}, {n}")
            for r in pts:
                if r["paper_slowdown"] is not None:
                    ideal = pts[-1]["seconds"]
                    ax.plot([r["hb_size"]], [ideal * (1 + r["paper_slowdown"])], "k*", ms=8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("HB domain size K")
        ax.set_ylabel("iteration time (s)")
        ax.set_title("Figure 8 (model; stars: the paper's K=256 slowdown on the ideal)")
    elif kind == "bandwidth":
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, vary, unit in ((axes[0], "hb", "HB bandwidth (Tbit/s)"), (axes[1], "nic", "NIC bandwidth (Gbit/s)")):
            for k in sorted({r["hb_size"] for r in rows}):
                pts = [r for r in rows if r["vary"] == vary and r["hb_size"] == k and r["bps"] is not None]
                scale = 1e12 if vary == "hb" else 1e9
                gain = next(r for r in rows if r["vary"] == vary and r["hb_size"] == k and r["bps"] is None)
                ax.plot([r["bps"] / scale for r in pts], [r["seconds"] for r in pts], marker="o",
                        label=f"K={k}: x4 saves {_pct(gain['gain_x4'])}, speedup "
                              f"{_pct(gain['gain_x4'] / (1 - gain['gain_x4']))} (paper {_pct(gain['paper_gain_x4'])})")
            ax.set_xlabel(unit)
            ax.set_ylabel("iteration time (s)")
            ax.legend(fontsize=7)
        fig.suptitle("Figure 9: GPT-1T, 32768 GPUs (model)")
    elif kind == "batch":
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for k in sorted({r["hb_size"] for r in rows}):
            pts = [r for r in rows if r["hb_size"] == k]
            axes[0].plot([r["batch"] for r in pts], [1e3 * r["seconds"] / r["batch"] for r in pts], marker="o", ms=3,
                         label=f"K={k}")
            axes[1].plot([r["batch"] for r in pts], [100 * r["relative"] for r in pts], marker="o", ms=3,
                         label=f"K={k}")
            for r in pts:
                if r["paper_relative"] is not None:
                    axes[1].plot([r["batch"]], [100 * r["paper_relative"]], "k*", ms=8)
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("global batch")
        axes[0].set_yscale("log")
        axes[0].set_ylabel("iteration time per sequence (ms)")
        axes[1].set_ylabel("performance relative to K = N (%)")
        axes[1].legend(fontsize=6, ncol=2)
        fig.suptitle("Figure 10: GPT-1T, 32768 GPUs (model; stars: the paper)")
    else:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for k_hb in sorted({r["gpus_per_domain"] for r in rows}):
            for radix in sorted({r["radix"] for r in rows}):
                pts = [r for r in rows if r["gpus_per_domain"] == k_hb and r["radix"] == radix]
                ax.plot([r["gpus"] for r in pts], [100 * r["cost_saving"] for r in pts], marker="o",
                        label=f"K={k_hb}, radix {radix}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs")
        ax.set_ylabel("cost saving of rail-only (%)")
        ax.set_title("Rail-only saving over cluster size and radix")
    for a in fig.axes:
        if a.get_legend_handles_labels()[0] and a.get_legend() is None:
            a.legend(fontsize=7)
    return fig


def _plot_traffic(plt: Any, matrices: dict[str, Any]) -> Any:
    import numpy as np
    from matplotlib.colors import LogNorm

    fig, axes = plt.subplots(1, len(matrices), figsize=(6 * len(matrices), 5))
    for ax, (name, tm) in zip(np.atleast_1d(axes), matrices.items()):
        n = min(tm.gpus, 128)
        m = tm.total()[:n, :n] / 1e9
        im = ax.imshow(np.where(m > 0, m, np.nan), norm=LogNorm(vmin=max(float(np.nanmin(np.where(m > 0, m, np.nan))),
                                                                        1e-3), vmax=float(m.max())),
                       cmap="viridis", interpolation="nearest")
        ax.set_title(f"{name}: GB per iteration, first {n} of {tm.gpus} GPUs (K={tm.hb_size})", fontsize=9)
        ax.set_xlabel("destination GPU")
        ax.set_ylabel("source GPU")
        fig.colorbar(im, ax=ax, fraction=0.046)
    return fig


def save(doc: dict[str, Any], out_dir: Path, stem: str) -> tuple[Path, Path]:
    """Write the saved document ``<stem>.json`` and draw ``<stem>.png`` from it (matplotlib,
    Agg). ``doc`` is the document's JSON form (the records' ``to_json``), so a saved file can be
    drawn again; its ``_matrices`` entry (traffic matrices) is drawn, not saved."""
    from innet.testbed.core.report import pyplot

    plt = pyplot()

    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, png_path = out_dir / f"{stem}.json", out_dir / f"{stem}.png"
    matrices = doc.pop("_matrices", None)
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    kind = doc["model"]
    if kind == "sweep":
        fig = _plot_sweep(plt, doc)
    elif kind == "traffic":
        fig = _plot_traffic(plt, matrices or {})
    else:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        if kind == "cost":
            _plot_cost(ax, doc["rows"])
        elif kind == "iteration":
            rows = doc["validation"]
            pos = range(len(rows))
            ax.bar([p - 0.2 for p in pos], [100 * r["published_hfu"] for r in rows], 0.4, label="published (derived)")
            ax.bar([p + 0.2 for p in pos], [100 * r["model_hfu"] for r in rows], 0.4, label="model")
            ax.set_xticks(list(pos), [str(r["model"]) for r in rows])
            ax.set_ylabel("HFU (%)")
            ax.set_title("Figure 7: HFU, Korthikanti et al. 2022 runs vs the model")
        else:
            _plot_collectives(ax, doc)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return json_path, png_path


def reproduction_table(rep: "Reproduction") -> Any:
    """Claim, paper, innet under each setting, inputs, and the cause of each miss."""
    from rich.table import Table

    from innet.testbed.rail.models.reproduce import fmt

    names = list(rep.rows)
    last = names[-1]
    table = Table(title="The Rail-only paper's claims reproduced (" + ", ".join(
        f"{n}: {rep.within(n)}/{rep.claims} within" for n in names) + ")")
    for col in ("where", "claim", "paper", *names, "within", "inputs / guesses", "cause of a miss"):
        table.add_column(col, overflow="fold")
    for i, row in enumerate(rep.rows[last]):
        claim = row.claim
        values = [fmt(rep.rows[n][i].value, claim.unit) for n in names]
        guesses = "; ".join(f"guess {g.name}={g.value} (" + ", ".join(
            f"{k}: {fmt(v, claim.unit)}" for k, v in g.alternatives) + ")" for g in row.guesses)
        inputs = ", ".join(f"{k}={v}" for k, v in row.inputs.items() if k != "times")
        table.add_row(claim.where, claim.what, fmt(claim.paper, claim.unit), *values,
                      "yes" if row.within else "NO", inputs + ("; " + guesses if guesses else ""), row.cause)
    return table


def alternatives_table(rows: Sequence[Alternative], setting: str) -> Any:
    """Each model alternative judged on the published runs (efficiency refitted under it),
    with the paper's claims counted beside."""
    from rich.table import Table

    table = Table(title=f"Model alternatives on top of '{setting}', judged on the published runs (median |error|; "
                        "the efficiency refitted on the A100 runs under each)")
    for col in ("alternative", "efficiency", "A100 fitted runs", "A100 full recompute", "H100 runs",
                "paper's claims within"):
        table.add_column(col, justify="right" if col != "alternative" else "left")
    for r in rows:
        table.add_row(r.alternative, f"{r.efficiency:.4f}", f"{r.a100_in_sample:.1%}",
                      f"{r.a100_out_of_sample:.1%}", f"{r.h100:.1%}", f"{r.within}/{r.claims}")
    return table


def out_of_sample_table(validation: Mapping[str, OutOfSample]) -> Any:
    """Published runs the model was not fitted to: time, HFU and error per run and setting,
    followed by the H100 runs' table."""
    from rich.console import Group

    return Group(_a100_validation_table(validation), h100_validation_table(validation))


def _a100_validation_table(validation: Mapping[str, OutOfSample]) -> Any:
    from rich.table import Table

    first = next(iter(validation.values()))
    table = Table(title=f"Out-of-sample validation: {first.source} (median |error| " + ", ".join(
        f"{name} {v.median_abs_error:.1%}" for name, v in validation.items()) + ")")
    for col in ("setting", "model", "GPUs", "configuration", "published s", "model s", "published HFU",
                "model HFU", "error"):
        table.add_column(col, justify="right")
    for name, v in validation.items():
        for r in v.rows:
            table.add_row(name, str(r.model), str(r.gpus), str(r.config), f"{r.published_s:.2f}",
                          f"{r.model_s:.2f}", f"{r.published_hfu:.1%}", f"{r.model_hfu:.1%}",
                          f"{r.error:+.1%}")
    return table


def h100_validation_table(validation: Mapping[str, OutOfSample]) -> Any:
    """Published BF16 H100 runs (nothing fitted to them): step time, MFU, error per run and
    setting, fused attention (the runs' kernels) and unfused (the model before it took them)."""
    from rich.table import Table

    first = next(iter(validation.values())).h100
    table = Table(title=f"Out-of-sample validation on H100: {first.source} (median |error| " + ", ".join(
        f"{name} {v.h100.median_abs_error:.1%}" for name, v in validation.items())
        + "; guessed: " + ", ".join(f"{k}={g}" for k, g in first.guesses)
        + "; median |error| of the last setting under: " + ", ".join(
            f"{k} {e:.1%}" if isinstance(e, float) else f"{k} ({e})"
            for k, e in list(validation.values())[-1].h100.guess_effect) + ")")
    for col in ("setting", "model", "GPUs", "configuration", "published s", "model s", "published MFU",
                "model MFU", "error", "error if unfused"):
        table.add_column(col, justify="right")
    for name, v in validation.items():
        for r in v.h100.rows:
            table.add_row(name, str(r.model), str(r.gpus), str(r.config), f"{r.published_s:.2f}",
                          f"{r.model_s:.2f}", f"{r.published_mfu:.1%}", f"{r.model_mfu:.1%}",
                          f"{r.error:+.1%}", f"{r.error_unfused:+.1%}")
    return table


def moe_table(rows: Sequence[MoeRow]) -> Any:
    """MoE-1.3B iteration time by expert placement, and what rail-only costs."""
    from rich.table import Table

    table = Table(title="MoE-1.3B (128 experts, 128 GPUs, K = 8): iteration time by expert placement")
    for col in ("platform", "batch", "experts in the HB domain (s)", "across rails, rail-optimized (s)",
                "across rails, rail-only (s)", "all-to-all share of time", "rail-only slowdown: all-to-all",
                "iteration", "paper's Amdahl estimate"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r.platform, str(r.batch), f"{r.hb.total:.3f}", f"{r.rail_optimized.total:.3f}",
                      f"{r.rail_only.total:.3f}", f"{r.slowdown.alltoall_time_share:.1%}",
                      f"{r.slowdown.alltoall:.1%}", f"{r.slowdown.iteration:.1%}",
                      f"{r.paper_amdahl:.1%}")
    return table


def table2_rows_table(rows: Sequence[Table2Row], power: str) -> Any:
    """Table II row by row, both networks, and the literal one-tier-fewer reading."""
    from rich.table import Table

    table = Table(title=f"Table II on innet's grid ({power} power): switches per tier (leaves first), "
                        "transceivers, cost, power, savings; 'tiers - 1' is the paper's literal reading")
    for col in ("GPUs", "K", "radix", "rail GPUs", "switches RO", "switches R", "transceivers RO/R",
                "cost RO/R $M", "power RO/R MW", "saving cost/power", "tiers - 1 possible?"):
        table.add_column(col, justify="right")
    for r in rows:
        ro, ronly = r.rail_optimized, r.rail_only
        literal = ("yes (= innet)" if r.agrees else
                   f"no: {r.literal_tiers} tiers hold {r.literal_capacity}" if not r.literal_feasible
                   else "yes")
        table.add_row(str(r.gpus), str(r.hb_size), str(r.radix), str(r.rail_gpus),
                      "/".join(map(str, ro.switches_per_tier)), "/".join(map(str, ronly.switches_per_tier)),
                      f"{ro.transceivers}/{ronly.transceivers}",
                      f"{ro.cost_usd / 1e6:.1f}/{ronly.cost_usd / 1e6:.1f}",
                      f"{ro.power_w / 1e6:.2f}/{ronly.power_w / 1e6:.2f}",
                      f"{r.cost_saving:.1%}/{r.power_saving:.1%}", literal)
    return table


FIGURE_GROUPS = {"fig2-5-traffic": ("fig2", "fig3", "fig4", "fig5", "a2a"), "fig7": ("fig7",), "fig8": ("fig8",),
                 "fig9": ("fig9",), "fig10": ("fig10",), "table2-cost-power": ("t2", "intro")}
"""One PNG per figure (the traffic figures share one), named by the claims' key prefixes."""


def save_reproduction(rep: "Reproduction", out_dir: Path) -> list[Path]:
    """``reproduce.json`` and one PNG per figure: the paper's number beside innet's under
    each setting, each bar labelled with its value (drawn from the saved document's form)."""
    from innet.testbed.core.report import pyplot

    plt = pyplot()
    doc = rep.to_json()
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "reproduce.json"
    json_path.write_text(json.dumps(doc, indent=2, default=str))
    paths = [json_path]
    names = list(doc["rows"])
    for stem, prefixes in FIGURE_GROUPS.items():
        idx = [i for i, r in enumerate(doc["rows"][names[-1]]) if r["key"].startswith(prefixes) and r["unit"] != "bool"]
        if not idx:
            continue
        fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(idx)), 4.5))
        width = 0.8 / (1 + len(names))
        tallest = 1.1
        for j, series in enumerate(["paper", *names]):
            vals = []
            for i in idx:
                row = doc["rows"][names[-1]][i]
                v = row["paper"] if series == "paper" else doc["rows"][series][i]["innet"]
                vals.append(v / row["paper"] if row["paper"] else 0.0)
            tallest = max(tallest, *vals)
            xs = [p + (j - len(names) / 2) * width for p in range(len(idx))]
            bars = ax.bar(xs, vals, width, label=series if series != "paper" else "paper (= 1)",
                          color="black" if series == "paper" else None)
            for b, i in zip(bars, idx):
                row = doc["rows"][names[-1]][i]
                raw = row["paper"] if series == "paper" else doc["rows"][series][i]["innet"]
                from innet.testbed.rail.models.reproduce import fmt

                ax.annotate(fmt(raw, row["unit"]), (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=6, rotation=90)
        ax.axhspan(0.9, 1.1, color="grey", alpha=0.15, label="paper +-10%")
        ax.set_ylim(0, tallest * 1.3)  # room for the value labels above the tallest bar
        ax.set_xticks(list(range(len(idx))), [doc["rows"][names[-1]][i]["key"] for i in idx], rotation=30,
                      ha="right", fontsize=7)
        ax.set_ylabel("innet / paper")
        ax.set_title(f"{stem}: the paper's numbers (black) and innet's")
        ax.legend(fontsize=7)
        fig.tight_layout()
        png = out_dir / f"reproduce-{stem}.png"
        fig.savefig(png, dpi=110)
        plt.close(fig)
        paths.append(png)
    if "curves" in doc:
        paths.append(_plot_curves(plt, doc["curves"], out_dir))
    return paths


def _plot_curves(plt: Any, curves: dict[str, Any], out_dir: Path) -> Path:
    """Fig. 8 (slowdown against K) and Fig. 10 (fraction of ideal against the batch), one line
    per setting, the paper's points as black markers."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, c in curves.items():
        for model, pts in c["fig8"].items():
            left.plot([k for k, _ in pts], [100 * v for _, v in pts], marker=".", label=f"{model} ({name})")
        for k, pts in c["fig10"].items():
            right.plot([b for b, _ in pts], [100 * v for _, v in pts], marker=".", label=f"K={k} ({name})")
    first = next(iter(curves.values()))
    for model, v in first["fig8_paper"].items():
        left.scatter([256], [100 * v], color="black", zorder=5, marker="x")
        left.annotate(f"paper {model}: {v:.1%}", (256, 100 * v), fontsize=7)
    for key, v in first["fig10_paper"].items():
        k, b = key.split(",")
        right.scatter([int(b)], [100 * v], color="black", zorder=5, marker="x")
        right.annotate(f"paper K={k}", (int(b), 100 * v), fontsize=7)
    left.set_xscale("log", base=2)
    left.set_yscale("symlog")
    left.set_ylim(bottom=0)
    left.set_xlabel("HB domain size K")
    left.set_ylabel("slowdown vs K = N (%)")
    left.set_title(f"Fig. 8, {first['gpus']} GPUs, batch 4096 (guesses)")
    right.set_xscale("log", base=2)
    right.set_xlabel("global batch")
    right.set_ylabel("performance relative to K = N (%)")
    right.set_title("Fig. 10, GPT-1T on 32,768 GPUs")
    left.legend(fontsize=6)
    right.legend(fontsize=6)
    fig.tight_layout()
    png = out_dir / "reproduce-fig8-fig10-curves.png"
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png
