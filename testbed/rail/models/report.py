"""Tables, JSON and PNG of the rail models (what ``innet model`` prints and saves)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from innet.testbed.rail.models import netcost, railperf


def cost_rows(clusters: Sequence[netcost.Cluster], parts: netcost.Parts) -> list[dict[str, Any]]:
    """One row per cluster: counts, cost and power of both networks and the savings."""
    rows = []
    for cluster in clusters:
        c = netcost.compare(cluster, parts)
        rows.append({"gpus": cluster.gpus, "gpus_per_domain": cluster.gpus_per_domain, "radix": cluster.radix,
                     "rail_optimized": asdict(c.rail_optimized), "rail_only": asdict(c.rail_only),
                     "cost_saving": c.cost_saving, "power_saving": c.power_saving})
    return rows


def cost_table(rows: list[dict[str, Any]], parts: netcost.Parts) -> Any:
    from rich.table import Table

    table = Table(title=f"Network cost and power (switch ${parts.switch_usd:,.0f}, {parts.switch_w:g} W; "
                        f"transceiver ${parts.transceiver_usd:,.0f}, {parts.transceiver_w:g} W)")
    for col in ("GPUs", "x", "radix", "tiers RO/R", "switches RO/R", "transceivers RO/R", "cost RO/R ($M)",
                "power RO/R (MW)", "cost saving", "power saving"):
        table.add_column(col, justify="right")
    for r in rows:
        ro, ronly = r["rail_optimized"], r["rail_only"]
        table.add_row(str(r["gpus"]), str(r["gpus_per_domain"]), str(r["radix"]),
                      f"{ro['tiers']}/{ronly['tiers']}", f"{ro['switches']}/{ronly['switches']}",
                      f"{ro['transceivers']}/{ronly['transceivers']}",
                      f"{ro['cost_usd'] / 1e6:.1f}/{ronly['cost_usd'] / 1e6:.1f}",
                      f"{ro['power_w'] / 1e6:.2f}/{ronly['power_w'] / 1e6:.2f}",
                      f"{r['cost_saving']:.1%}", f"{r['power_saving']:.1%}")
    return table


def perf_rows(grid: railperf.Grid, sizes: Sequence[int]) -> list[dict[str, Any]]:
    """Per size: all-to-all (``size`` bytes per GPU pair) and allreduce (``size`` bytes per GPU)."""
    return [{"bytes": s, **{f"a2a_{k}": v for k, v in railperf.alltoall_table(grid, s).items()},
             **{f"allreduce_{k}": v for k, v in railperf.allreduce_table(grid, s).items()}} for s in sizes]


def perf_table(grid: railperf.Grid, rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title=f"x={grid.x} GPUs per domain, y={grid.y} domains, C_S={grid.c_s_bps / 1e9:g} Gbit/s, "
                        f"C_F={grid.c_f_bps / 1e9:g} Gbit/s")
    for col in ("bytes", "a2a rail-opt (ms)", "a2a rail-only (ms)", "slowdown", "C_S/C_F",
                "AR hier. INA (ms)", "AR hier. ring (ms)", "AR flat INA (ms)", "AR flat ring (ms)"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r["bytes"]), f"{r['a2a_rail_optimized_s'] * 1e3:.3f}", f"{r['a2a_rail_only_s'] * 1e3:.3f}",
                      f"{r['a2a_slowdown']:.1%}", f"{r['a2a_seed_estimate']:.1%}",
                      f"{r['allreduce_hierarchical_ina_s'] * 1e3:.3f}",
                      f"{r['allreduce_hierarchical_ring_s'] * 1e3:.3f}",
                      f"{r['allreduce_flat_ina_s'] * 1e3:.3f}", f"{r['allreduce_flat_ring_s'] * 1e3:.3f}")
    return table


def save(doc: dict[str, Any], out_dir: Path, stem: str) -> tuple[Path, Path]:
    """``<stem>.json`` and ``<stem>.png`` (bars of the savings, or times against size)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, png_path = out_dir / f"{stem}.json", out_dir / f"{stem}.png"
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if doc["model"] == "cost":
        labels = [f"{r['gpus']} GPUs\nx={r['gpus_per_domain']} k={r['radix']}" for r in doc["rows"]]
        pos = range(len(labels))
        ax.bar([p - 0.2 for p in pos], [100 * r["cost_saving"] for r in doc["rows"]], 0.4, label="cost")
        ax.bar([p + 0.2 for p in pos], [100 * r["power_saving"] for r in doc["rows"]], 0.4, label="power")
        ax.set_xticks(list(pos), labels, fontsize=8)
        ax.set_ylabel("rail-only saving vs rail-optimized (%)")
        ax.set_title("Network cost and power model (inputs in the JSON)")
    else:
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
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return json_path, png_path
