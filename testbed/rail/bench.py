"""``innet bench --topo rail-only|rail-optimized``: collectives on one rail testbed, with the model.

On one brought-up topology (Mininet when root, else loopback), for every size S (int32
elements per GPU): hierarchical INA (HB reduce-scatter, INA per rail, HB all-gather), flat
INA through the spine (rail-optimized), and gloo's ring over every GPU, ranks in
:func:`~innet.testbed.rail.grid.ring_order` (ring neighbours share a domain or a rail; on rail-only
the rest of gloo's full mesh is relayed by the HB peer, :func:`~innet.testbed.rail.grid.host_routes`;
its float32 tensor has the same bytes as the INA rows' int32 vector). Then the uniform
all-to-all with ``D`` bytes per GPU pair: on rail-optimized both the direct route and the
two-step route (which uses exactly the links it would on rail-only, so the two compare in the
same run), on rail-only the two-step route. Each row carries the model's time from
:mod:`innet.testbed.rail.models.railperf` with ``C_S``/``C_F`` the HTB rates of the NIC and HB links.
Saves ``rail-bench-<kind>-<stamp>.json`` and ``.png``; a program, not a test (docs/design.md,
"Benchmarks").
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from innet.testbed.core.machine import Machine, describe as machine, switch_description
from innet.testbed.core.testbed import TestbedError, TestbedOptions, WorkerResult
from innet.testbed.rail.models import railperf
from innet.testbed.core.topology import TOPOLOGIES, Link
from innet.testbed.backends.select import resolve_backend
from innet.testbed.core.report import Column, markdown_table, rich_table
from innet.testbed.rail.workloads import slowest_times
from innet.testbed.rail.records import (AllToAllSlowdown, Amdahl, BenchFailure, CollectiveRow, NotApplicable,
                                        config_json)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RailBenchConfig:
    """Settings of one rail benchmark."""

    topo: str = "rail-optimized"
    """``rail-only`` or ``rail-optimized``."""
    domains: int = 2
    gpus_per_domain: int = 4
    nic_mbps: float = 10.0
    """C_S: NIC link rate (HTB)."""
    hb_mbps: float = 100.0
    """C_F: HB link rate (HTB)."""
    sizes: tuple[int, ...] = (16384,)
    """Allreduce elements per GPU (int32)."""
    pair_bytes: tuple[int, ...] = (50000,)
    """All-to-all bytes per GPU pair."""
    repeats: int = 3
    k: int = 64
    window: int = 16
    gloo: bool = True
    backend: str = "auto"
    out_dir: Path = Path("results")
    switch_impls: tuple[str, ...] = ("innet",)
    """Every P4 switch ``innet`` (innet-switch) and/or ``bmv2`` (simple_switch_grpc, Mininet only):
    one testbed each, in this order, rows labelled ``switch_impl``."""
    small_frames_first: bool = False
    """Mininet: shaped links send TCP's ACKs before queued data (``TestbedOptions.small_frames_first``)."""

    def __post_init__(self) -> None:
        if self.topo not in ("rail-only", "rail-optimized"):
            raise ValueError(f"rail bench topo {self.topo!r}: must be rail-only or rail-optimized")
        if not self.switch_impls or set(self.switch_impls) - {"innet", "bmv2"} \
                or len(set(self.switch_impls)) != len(self.switch_impls):
            raise ValueError(f"rail bench switch_impls={self.switch_impls}: one or more of innet, bmv2, each once")
        if not self.nic_mbps > 0 or not self.hb_mbps > 0:
            raise ValueError(f"rail bench rates nic={self.nic_mbps} hb={self.hb_mbps} Mbit/s: must be > 0")


@dataclass(frozen=True)
class RailBench:
    """One ``innet bench --topo rail-*`` run: every row, slowdown and failure, and where it ran."""

    config: RailBenchConfig
    topology: str
    backend: str
    switch: str
    """:func:`innet.testbed.core.machine.switch_description` of each implementation, ``" | "``-joined."""
    switch_absent: tuple[tuple[str, str], ...]
    """Implementations asked for but not installed: (name, why)."""
    machine: Machine
    """:func:`innet.testbed.core.machine.describe`; the document holds its ``to_json()``."""
    c_s_bps: float
    c_f_bps: float
    shaped: bool
    """The links have rates (Mininet); loopback has none and leaves the model columns empty."""
    rows: tuple[CollectiveRow, ...]
    not_applicable: tuple[NotApplicable, ...]
    slowdowns: tuple[AllToAllSlowdown, ...]
    failures: tuple[BenchFailure, ...]
    partial: bool
    """Ctrl-C ended the run early; the rows are those measured before."""

    def to_json(self) -> dict[str, Any]:
        c = self.config
        return {"kind": "rail-bench", "config": config_json(c),
                "not_applicable": [n.to_json() for n in self.not_applicable], "topology": self.topology,
                "backend": self.backend, "switch": self.switch, "switch_absent": dict(self.switch_absent),
                "machine": self.machine.to_json(), "c_s_bps": self.c_s_bps, "c_f_bps": self.c_f_bps, "shaped": self.shaped,
                "rows": [r.to_json() for r in self.rows], "small_frames_first": self.shaped and c.small_frames_first,
                "alltoall_slowdown": [s.to_json() for s in self.slowdowns],
                "failures": [f.to_json() for f in self.failures], "partial": self.partial,
                "note": None if self.shaped else "loopback: no link rates, all-to-all does not cross the switches; "
                                                 "model columns left empty"}


def _row(collective: str, size: int, unit: str, per_rank: list[list[WorkerResult]], index: int,
         model_s: float | None, switch_impl: str) -> CollectiveRow:
    times = slowest_times(per_rank, index)
    return CollectiveRow(collective, size, unit, statistics.median(times), min(times), tuple(times),
                         all(r[index].ok for r in per_rank), model_s, switch_impl)


PAPER_A2A_SHARE = 0.27
"""The all-to-all's share of MoE-1.3B's traffic in the Rail-only paper's Fig. 5 (its Amdahl argument)."""
PAPER_SLOWDOWNS = (0.082, 0.112)
"""The Rail-only paper's all-to-all slowdowns on DGX A100 and H100."""


def alltoall_slowdown(direct: CollectiveRow, two_step: CollectiveRow, grid: railperf.Grid) -> AllToAllSlowdown:
    """Rail-only's all-to-all (two-step) over rail-optimized's (direct), measured in one run:
    the ratio of the medians, its spread over the repeats (the i-th fastest of each route
    paired), and the Amdahl total: the slowdown times the all-to-all's share of an MoE
    iteration's traffic (``innet model traffic``'s MoE-1.3B, and the Rail-only paper's 27%)."""
    from innet.testbed.rail.models import traffic

    measured = two_step.median_s / direct.median_s - 1
    ratios = [b / a - 1 for a, b in zip(sorted(direct.times), sorted(two_step.times))]
    share = traffic.summary(traffic.moe(traffic.MOE_1_3B, 128, 512, 8))["a2a_share"]
    low, high = PAPER_SLOWDOWNS
    return AllToAllSlowdown(direct.size, measured, len(ratios), (min(ratios), max(ratios)),
                            railperf.alltoall_slowdown(grid), railperf.seed_slowdown_estimate(grid),
                            Amdahl(share, share * measured, PAPER_A2A_SHARE,
                                   (PAPER_A2A_SHARE * low, PAPER_A2A_SHARE * high)), direct.switch_impl)


def slowdown_line(s: AllToAllSlowdown) -> str:
    """One line for the CLI and the markdown report."""
    a = s.amdahl
    on = f" on {s.switch_impl} switches" if s.switch_impl != "innet" else ""
    return (f"all-to-all two-step{on} slowdown at D={s.pair_bytes} B: measured {s.measured:.1%} (median of "
            f"{s.runs} runs, spread {s.spread[0]:.1%} to {s.spread[1]:.1%}), model {s.model:.1%}, "
            f"seed's C_S/C_F {s.seed_estimate:.1%}; Amdahl total with the all-to-all at {a.a2a_share:.1%} "
            f"of an MoE iteration's bytes: {a.total:.1%} (seed: {a.paper_a2a_share:.0%} x 8.2-11.2% = "
            f"{a.paper_totals[0]:.1%}-{a.paper_totals[1]:.1%})")


def run(config: RailBenchConfig, progress: Progress = lambda _: None,
        absent: Sequence[tuple[str, str]] = ()) -> RailBench:
    """Every collective on one testbed per switch implementation.
    ``absent``: implementations asked for but not installed, (name, why), recorded. Ctrl-C
    ends the run early: the rows so far, ``partial`` set."""
    backend = resolve_backend(config.backend)
    topo = TOPOLOGIES[config.topo](domains=config.domains, gpus_per_domain=config.gpus_per_domain,
                                   nic_link=Link(bw_mbps=config.nic_mbps), hb_link=Link(bw_mbps=config.hb_mbps))
    grid = railperf.Grid(config.gpus_per_domain, config.domains, config.nic_mbps * 1e6, config.hb_mbps * 1e6)
    rows: list[CollectiveRow] = []
    failures: list[BenchFailure] = []
    slowdowns: list[AllToAllSlowdown] = []
    partial = False
    for impl in config.switch_impls:
        try:
            impl_rows = _measure(config, impl, topo, backend, grid, failures, progress)
        except _Interrupted as stop:
            impl_rows, partial = stop.rows, True
        rows.extend(impl_rows)
        for d in config.pair_bytes:
            by = {r.collective: r for r in impl_rows if r.size == d and r.unit == "bytes/pair"}
            if "all-to-all direct" in by and "all-to-all two-step" in by:
                slowdowns.append(alltoall_slowdown(by["all-to-all direct"], by["all-to-all two-step"], grid))
        if partial:
            break
    not_applicable = () if topo.kind == "rail-optimized" else (
        NotApplicable("flat INA", "rail-only has no switch that every GPU reaches (no spine)"),
        NotApplicable("all-to-all direct", "rail-only has no NIC path between rails"))
    return RailBench(config=config, topology=topo.name, backend=backend,
                     switch=" | ".join(switch_description("auto", impl) for impl in config.switch_impls),
                     switch_absent=tuple(absent), machine=machine(), c_s_bps=grid.c_s_bps, c_f_bps=grid.c_f_bps,
                     shaped=backend == "mininet", rows=tuple(rows), not_applicable=not_applicable,
                     slowdowns=tuple(slowdowns), failures=tuple(failures), partial=partial)


class _Interrupted(Exception):
    """Ctrl-C during one testbed's collectives, carrying the rows measured before it."""

    def __init__(self, rows: list[CollectiveRow]) -> None:
        super().__init__("interrupted")
        self.rows = rows


def _measure(config: RailBenchConfig, impl: str, topo: Any, backend: str, grid: railperf.Grid,
             failures: list[BenchFailure], progress: Progress) -> list[CollectiveRow]:
    """The rows of one testbed whose P4 switches are ``impl``; a failed bring-up or collective
    is a failure entry (the other implementation's rows still come)."""
    from innet.controller.errors import ControllerError
    from innet.testbed.rail import workloads
    from innet.testbed.rail.testbed import RailTestbed

    shaped = backend == "mininet"
    rows: list[CollectiveRow] = []
    options = TestbedOptions(k=config.k, window=config.window, switch_impl=impl,
                             small_frames_first=config.small_frames_first and backend == "mininet")
    progress(f"bringing up {topo.name} ({backend}, {impl} switches)")
    tb = RailTestbed(topo, options, backend=backend)

    def attempt(what: str, body: Callable[[], None]) -> None:
        progress(f"{what} ({impl})")
        try:
            body()
        except TestbedError as error:
            failures.append(BenchFailure(what, impl, str(error)[-400:]))

    try:
        tb.start()
    except (TestbedError, ControllerError) as error:
        if len(config.switch_impls) == 1:
            raise
        failures.append(BenchFailure("bring-up", impl, str(error)[-400:]))
        return rows
    try:  # the testbed's own ``with`` semantics, after a bring-up failure was told apart
        sizes = list(config.sizes)

        def allreduce(label: str, run: Callable[[], Any], model: Callable[[Any, int], Any]) -> Callable[[], None]:
            def measure() -> None:
                res = run()
                rows.extend(_row(label, s, "elements", res, i, model(grid, 4 * s) if shaped else None, impl)
                            for i, s in enumerate(sizes))
            return measure

        attempt("hierarchical INA", allreduce("hierarchical INA",
                                              lambda: workloads.hierarchical(tb, sizes, repeats=config.repeats),
                                              railperf.allreduce_hierarchical_ina))
        attempt("hierarchical ring", allreduce(
            "hierarchical ring", lambda: workloads.hierarchical(tb, sizes, repeats=config.repeats, collective="ring"),
            railperf.allreduce_hierarchical_ring))
        if tb.grid.spine is not None:
            attempt("flat INA through the spine", allreduce(
                "flat INA (spine)", lambda: workloads.flat(tb, sizes, repeats=config.repeats, exact=True),
                railperf.allreduce_flat_ina))
        if config.gloo:
            attempt("gloo ring allreduce", allreduce("gloo ring", lambda: workloads.gloo(tb, sizes, repeats=config.repeats),
                                                     railperf.allreduce_flat_ring))
        routes = ["direct", "two-step"] if tb.grid.spine is not None else ["two-step"]
        for route in routes:
            def a2a(route: str = route) -> None:
                for d in config.pair_bytes:
                    res = workloads.alltoall(tb, d, repeats=config.repeats, route=route)
                    model = (railperf.alltoall_rail_optimized(grid, d) if route == "direct"
                             else railperf.alltoall_rail_only(grid, d))
                    rows.append(_row(f"all-to-all {route}", d, "bytes/pair", res, 0, model if shaped else None,
                                     impl))

            attempt(f"all-to-all ({route})", a2a)
    except KeyboardInterrupt:  # Ctrl-C: torn down as always, the rows so far kept
        tb.stop(keep_logs=options.keep_logs)
        raise _Interrupted(rows) from None
    except BaseException:
        tb.stop(keep_logs=True)
        raise
    tb.stop(keep_logs=options.keep_logs)
    return rows


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.1f}"


COLUMNS = (
    Column("collective", lambda r: r["collective"], align="left"),
    Column("size", lambda r: f"{r['size']} {r['unit']}" if "size" in r else "-"),
    Column("median (ms)", lambda r: _ms(r.get("median_s"))),
    Column("min (ms)", lambda r: _ms(r.get("min_s"))),
    Column("model (ms)", lambda r: _ms(r.get("model_s"))),
    Column("exact", lambda r: f"n/a: {r['reason']}" if "reason" in r else ("yes" if r["ok"] else "NO"),
           alarm=lambda r: "reason" not in r and not r["ok"]),
)
"""The rail table, in the terminal and in docs/rail.md alike (rows not applicable on a
design say why in the last column)."""


SWITCH_COLUMN = Column("switch", lambda r: r.get("switch_impl", ""), align="left")
"""Added when a run measured other switches than innet-switch alone (``--switch-impl``)."""


# The renderers below read a saved document (``RailBench.to_json``), so a saved file can be
# rendered again.


def _all_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [*doc["rows"], *doc.get("not_applicable", [])]


def columns_of(doc: dict[str, Any]) -> tuple[Column, ...]:
    """The table's columns for a saved document: a switch column when it measured more than innet-switch."""
    impls = tuple(doc["config"].get("switch_impls", ("innet",)))
    return COLUMNS if impls == ("innet",) else (COLUMNS[0], SWITCH_COLUMN, *COLUMNS[1:])


def table(doc: dict[str, Any]) -> Any:
    """The terminal table of a saved document."""
    title = (f"{doc['topology']} ({doc['backend']}), C_S={doc['c_s_bps'] / 1e6:g} Mbit/s, "
             f"C_F={doc['c_f_bps'] / 1e6:g} Mbit/s, K={doc['config']['k']}"
             + (", small frames first" if doc.get("small_frames_first") else ""))
    return rich_table(title, columns_of(doc), _all_rows(doc))


def markdown(doc: dict[str, Any]) -> str:
    """The Markdown table and slowdown lines of a saved document."""
    lines = [markdown_table(columns_of(doc), _all_rows(doc))]
    for s in doc["alltoall_slowdown"]:
        lines.append("\n" + slowdown_line(AllToAllSlowdown.from_json(s)))
    return "\n".join(lines)


def save(doc: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """Writes the document (``RailBench.to_json``) and its plot under ``out_dir``."""
    from innet.testbed.core.report import pyplot

    plt = pyplot()

    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    stem = out_dir / f"rail-bench-{doc['config']['topo']}-{stamp}"
    json_path, png_path = stem.with_suffix(".json"), stem.with_suffix(".png")
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    rows = doc["rows"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    several = len(doc["config"].get("switch_impls", ("innet",))) > 1
    labels = [f"{r['collective']}\n{r['size']} {r['unit']}" + (f"\n{r['switch_impl']}" if several else "")
              for r in rows]
    pos = list(range(len(rows)))
    ax.bar([p - 0.2 for p in pos], [r["median_s"] * 1e3 for r in rows], 0.4, label="measured (median)")
    ax.bar([p + 0.2 for p in pos], [(r["model_s"] or 0) * 1e3 for r in rows], 0.4, label="model")
    ax.set_xticks(pos, labels, fontsize=7)
    ax.set_ylabel("completion time (ms)")
    ax.set_title(f"{doc['topology']} on {doc['backend']} ({doc['switch']}); C_S={doc['c_s_bps'] / 1e6:g} Mbit/s, "
                 f"C_F={doc['c_f_bps'] / 1e6:g} Mbit/s; {doc['machine'].get('cpu', '')}", fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return json_path, png_path
