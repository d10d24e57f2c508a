"""The report of ``innet geo bench``: the table it prints, the one-line summaries of a
straggler, a re-plan and a rate change, the plot, and the saved JSON.

Reads :class:`~innet.testbed.geo.records.BenchResult` records and nothing else; the plot is
drawn from the document's JSON form, so a saved ``geo-bench-*.json`` can be drawn again.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from innet.testbed.geo.config import COMPRESSIONS, GeoBenchError
from innet.testbed.geo.measures import LINK_TOLERANCE
from innet.testbed.geo.records import (BenchResult, LinkCheck, PipelineRow, RateChangeEffect, Replan, GeoRow,
                                       StragglerEffect)


def _ms(v: float | None) -> str:
    return f"{v * 1e3:.1f}" if v is not None else "-"


def combine(docs: Mapping[str, BenchResult], absent: Mapping[str, str] | None = None) -> BenchResult:
    """One document of runs made on several switch implementations (``innet``, ``bmv2``), in
    that order: the first run's settings and plans, every run's rows labelled with its switch
    (speedups stay against each switch's own OP-Fence + AdaTopK row), and the switches asked
    for but not there (``switch_absent``: implementation -> why)."""
    if not docs:
        raise GeoBenchError("geo bench: no switch implementation to run")
    first = next(iter(docs.values()))
    rows = tuple(replace(r, switch=impl) for impl, doc in docs.items() for r in doc.rows)
    return replace(first, rows=rows, partial=any(d.partial for d in docs.values()), switches=tuple(docs),
                   switch_absent=dict(absent or {}))


def link_check_line(checks: Sequence[LinkCheck]) -> str:
    """One line: each boundary's link as configured and as probed, flagged when off."""
    return "; ".join(f"{c.link} {c.configured_mbps:g} Mbit/s {c.configured_delay_ms:g} ms -> "
                     f"{c.probed_mbps:.1f} Mbit/s {c.probed_delay_ms:.1f} ms"
                     f"{'' if c.within_tolerance else f' (more than {LINK_TOLERANCE:.0%} off)'}" for c in checks)


def rate_change_line(c: RateChangeEffect) -> str:
    """One line: the changed link's rates and AdaTopK's ratio per step around the change."""
    at = c.step
    shown = " ".join(f"{x:.3f}" for x in c.ratio_per_step[max(0, at - 2):at + 6])
    rates = " ".join(f"{x:.2f}" for x in c.measured_mbps_per_step[max(0, at - 2):at + 6])
    before = f"{c.before_mbps:g}" if c.before_mbps is not None else "?"
    return (f"link {c.link} {before} -> {c.after_mbps:g} Mbit/s after step {at}"
            f"{'' if c.applied else ' (not applied: the run ended first)'}; from step {max(0, at - 2)}, "
            f"measured Mbit/s per step: {rates}; ratio per step: {shown}")


def straggler_line(s: StragglerEffect) -> str:
    """One line: what the straggler did to the step and what a re-plan would pick."""
    line = (f"site {s.site} to {s.share:g} CPU after step {s.step}: step {_ms(s.step_before_s)} -> "
            f"{_ms(s.step_after_s)} ms, its stage's compute {_ms(s.compute_before_s)} -> "
            f"{_ms(s.compute_after_s)} ms/step")
    if s.replan is not None:
        r = s.replan
        line += (f"; measured speed {s.speed_before:.2f} -> {s.speed_after:.2f}; OP-Fence's plan with it: "
                 f"{'-'.join(r.sites)} cuts {list(r.cuts)} predicted "
                 f"{_ms(r.predicted_step_s)} ms vs {_ms(r.kept_plan_predicted_step_s)} ms keeping the plan")
    return line


def replan_line(r: Replan) -> str:
    """One line: where and when the straggler was found and what re-planning did to the step."""
    d = r.detected
    return (f"site {r.site} detected online at step {d.step} ({d.factor:.1f}x its compute); after step {r.at_step}: "
            f"{'-'.join(r.sites_before)} cuts {list(r.cuts_before)} -> "
            f"{'-'.join(r.sites_after)} cuts {list(r.cuts_after)} (straggler speed {r.speed_after:.2f}); step "
            f"{_ms(r.step_after_straggler_s)} ms with the straggler -> {_ms(r.step_after_replan_s)} ms "
            f"re-planned (predicted {_ms(r.predicted_after_replan_s)}); pause {r.replan_pause_s:.1f} s")


def _num(v: float | None, fmt: str = ".1f") -> str:
    return format(v, fmt) if v is not None else "-"


def _row_line(r: GeoRow, several: bool) -> str:
    c = r.comparison
    pred = f"{r.predicted_step_s * 1e3:8.1f}" if r.predicted_step_s is not None else f"{'-':>8}"
    return (f"{r.switch or 'innet':6} " * several
            + f"{r.placement:9} {r.compression:8} {'-'.join(r.sites):7} {r.step_s * 1e3:8.1f} "
            f"{pred} {_num(r.targets.time_to_accuracy_s):>7} {_num(r.targets.time_to_loss_s):>7} "
            f"{r.final_accuracy or 0:5.3f} {_num(r.final_test_loss, '.3f'):>6} "
            f"{_num(c.loss_at_equal_wall if c else None, '.3f'):>6} "
            f"{r.wan_bytes_per_step / 1e3:11.1f} {r.slow_link_bytes_per_step / 1e3:8.1f} "
            f"{_num(c.speedup_step if c else None, '.2f'):>6} {_num(c.speedup_tta if c else None, '.2f'):>6} "
            f"{_num(c.speedup_ttl if c else None, '.2f'):>6}  {r.sends}")


def table(doc: BenchResult) -> str:
    """The printed table: one line per run, then what the runs' links, stragglers and re-plans did."""
    several = len(doc.switches or ()) > 1
    rows = doc.rows
    lines = [f"{'switch ' if several else ''}{'placement':9} {'compress':8} {'sites':7} {'step ms':>8} {'pred ms':>8} "
             f"{'TTA s':>7} {'TTL s':>7} {'acc':>5} {'loss':>6} {'@wall':>6} {'WAN kB/step':>11} {'slow kB':>8} "
             f"{'x step':>6} {'x TTA':>6} {'x TTL':>6}  sends on the slowest link"]
    # x step / x TTA / x TTL: OP-Fence + AdaTopK's speedup against the row (paper: 1.45-9.39x)
    lines += [_row_line(r, several) for r in rows]
    if rows:
        wall = rows[0].comparison.equal_wall_s if rows[0].comparison else None
        lines.append(f"TTL: training seconds to test loss {rows[0].targets.target_loss:g} nats; @wall: test loss at "
                     f"{wall or 0:.1f} s of training (the shortest run); slow kB: bytes per step on the slowest "
                     "link, both ways")
    if doc.site_speeds:
        lines.append("measured site speeds (1.0 = the planning process): "
                     + ", ".join(f"{s} {v:.2f}" for s, v in doc.site_speeds.items()))
        for comp in COMPRESSIONS:
            aware, blind = doc.row("opfence", comp), doc.row("uniform", comp)
            if aware and blind:
                lines.append(f"speed-aware plan ({'-'.join(aware.sites)} cuts {list(aware.cuts)}) vs the plan made "
                             f"assuming equal speeds ({'-'.join(blind.sites)} cuts {list(blind.cuts)}), {comp}: "
                             f"{blind.step_s * 1e3:.1f} -> {aware.step_s * 1e3:.1f} ms per step "
                             f"({blind.step_s / aware.step_s:.2f}x)")
    for r in rows:
        if not isinstance(r, PipelineRow):
            continue
        run = f"{r.placement}/{r.compression}"
        if r.link_check:
            lines.append(f"links of {run} (configured -> probed): {link_check_line(r.link_check)}")
        for d in r.stragglers_detected:
            lines.append(f"straggler detected online in {run}: site {d.site} (stage {d.stage}) at step {d.step}, "
                         f"compute {d.baseline_s * 1e3:.1f} -> {d.recent_s * 1e3:.1f} ms/step ({d.factor:.1f}x)")
        if r.straggler is not None:
            lines.append(f"straggler in {run}: {straggler_line(r.straggler)}")
        if r.rate_change is not None:
            lines.append(f"rate change in {run}: {rate_change_line(r.rate_change)}")
        if r.replan is not None:
            lines.append(f"re-planned {run}: {replan_line(r.replan)}")
    checks = [c for r in rows if isinstance(r, PipelineRow) for c in r.link_check]
    if checks:
        off = sorted({c.link for c in checks if not c.within_tolerance})
        lines.append(f"WAN links as configured (probed rate and delay within {LINK_TOLERANCE:.0%}): "
                     + (f"all {len(checks)} probes" if not off else f"{len(checks) - len(off)} of {len(checks)} probes; "
                        f"off: {', '.join(off)}"))
    lines += [f"no {impl} rows: {why}" for impl, why in (doc.switch_absent or {}).items()]
    return "\n".join(lines)


def plot(doc: Mapping[str, Any], path: Path) -> Path:
    """Training loss and test accuracy against training wall-clock, one curve per run, drawn
    from a document's JSON form (``BenchResult.to_json`` or a saved file)."""
    from innet.testbed.core.report import plain_log_ticks, pyplot

    plt = pyplot()

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in doc["rows"]:
        label = f"{r['placement']} / {r['compression']}" + (f" ({r['switch']})" if "switch" in r else "")
        curve = np.array(r["loss_curve"])
        ax1.plot(curve[:, 0], curve[:, 1], label=label)
        acc = np.array(r["accuracy_curve"])
        if len(acc):
            ax2.plot(acc[:, 0], acc[:, 2], marker=".", label=label)
    s = doc["settings"]
    ax1.set_xlabel("training wall-clock (s)")
    ax1.set_ylabel("training loss")
    ax1.set_xscale("log")
    ax2.set_xlabel("training wall-clock (s)")
    ax2.set_ylabel("test accuracy")
    ax2.set_xscale("log")
    ax2.axhline(s["target_accuracy"], color="grey", lw=0.5)
    for ax in (ax1, ax2):
        plain_log_ticks(ax.xaxis)
    ax1.legend(fontsize=8)
    fig.suptitle(f"innet geo: {s['task']}, 3 sites (WAN 10M/40ms, 100M/10ms, 1G/2ms), {s['microbatches']}x"
                 f"{s['batch']} per step, {s['replicas']} pipeline(s), {doc['machine']['cores']} cores, "
                 f"{s.get('testbed', 'loopback')}, WAN delay by {s['wan_emulation'].split(':')[0]}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def save(doc: BenchResult, out_dir: Path, stem: str = "geo-bench") -> tuple[Path, Path]:
    """The document as JSON and its plot as PNG, named by task, testbed and date."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = doc.to_json()
    stamp = doc.date.replace(":", "").replace("-", "")
    tier = "-mininet" if doc.settings.get("testbed") == "mininet" else ""
    json_path = out_dir / f"{stem}-{doc.settings['task']}{tier}-{stamp}.json"
    json_path.write_text(json.dumps(data, indent=2) + "\n")
    return json_path, plot(data, json_path.with_suffix(".png"))


__all__ = ["combine", "link_check_line", "plot", "rate_change_line", "replan_line", "save", "straggler_line", "table"]
