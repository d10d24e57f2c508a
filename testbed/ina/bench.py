"""``innet bench``: innet in-network allreduce vs gloo's ring allreduce on the same testbed.

For every (workers N, loss) of the grid the star topology is brought up once (Mininet
when root, else loopback); on it, for every message size S, both collectives run
``repeats`` timed float32 allreduces (after a warm-up, each after a barrier). Reported per
row: time (mean, min), goodput (message bits / time), the switch's achieved packet rate
(frames the workers sent per second of operation), bytes on the wire per worker
(interface counters in Mininet; the agent's frame counters on loopback, where gloo is
not measurable) next to the theory of :mod:`innet.testbed.core.bounds`, for innet the chunks
retransmitted per timed operation (all workers together; column "retrans/op"), and whether
every worker got the exact result. Saves ``bench-<stamp>.json`` and ``.png`` under the output
directory and prints a rich table. A benchmark is a program, not a test (docs/design.md,
"Benchmarks").

:func:`measure` gives the typed :class:`~innet.testbed.ina.records.AllreduceBench`; the
renderers (:func:`caption`, :func:`table`, :func:`markdown_table`, :func:`absent_note`,
:func:`plot`) and :func:`save` take its saved JSON document, so a saved file renders again.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Callable, Sequence

from innet.testbed.core import bounds as costmodel
from innet.testbed.core.testbed import Testbed, TestbedError, TestbedOptions, WorkerResult
from innet.testbed.core.topology import Link, star
from innet.testbed.core.machine import describe as machine, switch_description
from innet.testbed.core.report import Column, markdown_table as markdown_table_of, rich_table
from innet.testbed.backends.select import open_testbed as open_star
from innet.testbed.ina.config import BenchConfig
from innet.testbed.ina.records import AllreduceFailure, AllreduceBench, Row, RunInfo


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def summarize(collective: str, n: int, loss_pct: float, per_rank: list[list[WorkerResult]], k: int,
              link: costmodel.LinkModel, switch_impl: str = "innet") -> list[Row]:
    """Rows (one per size) from every rank's results."""
    rows = []
    for series in zip(*per_rank):
        size = series[0].elements
        repeats = len(series[0].times)
        per_op_max = [max(r.times[i] for r in series) for i in range(repeats)]
        wires = [r.wire for r in series if r.wire is not None]
        mean_time = _mean([t for r in series for t in r.times])
        time_max = _mean(per_op_max)
        est = (costmodel.ring_allreduce(n, size, link) if collective == "gloo"
               else costmodel.ina_allreduce(n, size, k, link))
        pps = sum(w["tx_packets"] for w in wires) / time_max if wires and len(wires) == n and time_max else None
        retrans = None
        if collective == "ina" and repeats and all("timed_retransmitted" in r.stats for r in series):
            retrans = sum(r.stats["timed_retransmitted"] for r in series) / repeats
        rows.append(Row(
            collective=collective, workers=n, elements=size, loss_pct=loss_pct, ok=all(r.ok for r in series),
            time_mean_s=mean_time, time_max_s=time_max,
            goodput_gbps=costmodel.goodput_bps(size, time_max) / 1e9,
            switch_pps=pps,
            wire_up=_mean([w["tx_bytes"] for w in wires]) if wires else None,
            wire_down=_mean([w["rx_bytes"] for w in wires]) if wires else None,
            wire_source=series[0].wire_source,
            theory_time_s=est.time_s, theory_payload=est.payload_up, theory_wire=est.wire_up,
            retransmitted=retrans, switch_impl=switch_impl))
    return rows


def open_testbed(backend: str, n: int, loss_pct: float, config: BenchConfig, switch_impl: str | None = None,
                 fixed_ports: bool = False) -> Testbed:
    """The star of ``n`` workers with ``switch_impl`` (default: the config's first). ``fixed_ports``:
    the switch on 9559 (``TestbedOptions.fixed_ports``), for a bring-up a user looks at; the
    benchmark's own testbeds take any free port, so two runs never contend for one."""
    k = config.resolved_k()
    options = TestbedOptions(k=k, window=config.window,
                             defines=(("INNET_K", str(k)),) if k != 64 else (),
                             switch_loss=loss_pct / 100 if backend == "loopback" else 0.0,
                             switch_executor=config.executor, switch_impl=switch_impl or config.switch_impls[0],
                             start_timeout=300.0 if k >= 1024 else 60.0,  # large K: minutes to compile
                             fixed_ports=fixed_ports)
    if backend == "mininet":
        link = Link(bw_mbps=config.bw_mbps, delay_ms=config.delay_ms, loss_pct=loss_pct or None,
                    mtu=config.mtu)
        return open_star(star(workers=n, link=link), options, backend)
    return open_star(star(workers=n), options, backend)


Progress = Callable[[str], None]


def measure(config: BenchConfig, progress: Progress = lambda _: None,
            absent: Sequence[tuple[str, str]] = ()) -> AllreduceBench:
    """Run the grid; its ``to_json`` is the document :func:`save` writes. ``absent``: switch implementations asked for but not installed, (name,
    why), recorded so the document says so. Ctrl-C ends the grid early: the result then holds
    the rows measured so far and is ``partial``."""
    backend = config.resolved_backend()
    rows: list[Row] = []
    failures: list[AllreduceFailure] = []
    partial = False
    try:  # Ctrl-C: the testbed of the moment is torn down by its with; the rows so far are kept
        for impl in config.switch_impls:
            for n in config.workers:
                for loss in config.losses:
                    progress(f"bringing up star of {n} workers on {backend} with {impl}, loss {loss:g}%")
                    link = costmodel.LinkModel(
                        bw_bps=config.bw_mbps * 1e6 if backend == "mininet" and config.bw_mbps else None,
                        latency_s=(config.delay_ms or 0) / 1e3 if backend == "mininet" else 0.0, loss=loss / 100,
                        mtu=config.link_mtu)
                    with open_testbed(backend, n, loss, config, impl) as tb:
                        for collective in config.collectives:
                            progress(f"{collective}: {n} workers, {impl}, sizes {list(config.sizes)}, loss {loss:g}%")
                            try:
                                if collective == "ina":
                                    per_rank = tb.run_ina(config.sizes, config.repeats, timeout=config.timeout_s)
                                else:
                                    per_rank = tb.run_gloo(config.sizes, config.repeats, timeout=config.timeout_s)
                            except TestbedError as error:
                                first_line = str(error).splitlines()[0]
                                progress(f"[red]{collective} failed[/]: {first_line}")
                                failures.append(AllreduceFailure(collective, n, loss, impl, first_line))
                                continue
                            rows.extend(summarize(collective, n, loss, per_rank, config.resolved_k(), link, impl))
    except KeyboardInterrupt:
        partial = True
    return AllreduceBench(RunInfo.now(config, backend), tuple(rows), tuple(failures), tuple(absent), partial)


def caption(doc: dict[str, Any]) -> str:
    """One line naming machine, switch backend, K, workers, sizes, link rate and loss.

    The renderers below take the saved document (``AllreduceBench.to_json()``), not the
    record: they render ``bench-*.json`` files written by earlier runs too."""
    m, s = doc["machine"], doc["settings"]
    link = (f"{s['bw_mbps']:g} Mbit/s links" if s["bw_mbps"] and doc["backend"] == "mininet"
            else "no link shaping (loopback)" if doc["backend"] == "loopback" else "unshaped veths")
    if s.get("delay_ms") and doc["backend"] == "mininet":
        link += f", {s['delay_ms']:g} ms"
    return (f"{m['cpu']} ({m['cores']} cores), {doc['backend']}, {doc['switch']}, K={s['k']}, MTU {s.get('mtu') or 1500}, window={s['window']}, "
            f"workers {','.join(map(str, s['workers']))}, S={','.join(_size(x) for x in s['sizes'])}, "
            f"{link}, loss {','.join(f'{p:g}%' for p in s['losses'])}")


def _size(n: int) -> str:
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def _bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, div in (("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n:.0f} B"


def _retrans(n: float | None) -> str:
    """Retransmissions per operation: integers as such, else one decimal."""
    if n is None:
        return "-"
    return f"{n:.0f}" if float(n).is_integer() else f"{n:.1f}"


COLUMNS = (
    Column("collective", lambda r: r["collective"], align="left"),
    Column("switch", lambda r: r.get("switch_impl", "innet"), align="left"),
    Column("N", lambda r: str(r["workers"])),
    Column("S", lambda r: _size(r["elements"])),
    Column("loss", lambda r: f"{r['loss_pct']:g}%"),
    Column("time ms", lambda r: f"{r['time_max_s'] * 1e3:.1f}"),
    Column("theory ms", lambda r: f"{r['theory_time_s'] * 1e3:.1f}"),
    Column("goodput Gb/s", lambda r: f"{r['goodput_gbps']:.3f}"),
    Column("switch pkt/s", lambda r: f"{r['switch_pps']:.0f}" if r["switch_pps"] else "-"),
    Column("sent/worker", lambda r: _bytes(r["wire_up"])),
    Column("theory/worker", lambda r: _bytes(r["theory_wire"])),
    Column("recv/worker", lambda r: _bytes(r["wire_down"])),
    Column("retrans/op", lambda r: _retrans(r["retransmitted"])),
    Column("exact", lambda r: "yes" if r["ok"] else "NO", alarm=lambda r: not r["ok"]),
)
"""The allreduce table, in the terminal and in docs/benchmarks.md alike."""

LOOPBACK_NOTE = ("loopback: innet's rows cross innet-switch (frames tunnelled in UDP), gloo's run on lo "
                 "without a switch or link shaping; the two are not comparable (run as root for Mininet)")


def table(doc: dict[str, Any]) -> Any:
    """A rich Table of a saved document's rows (on loopback its caption says why INA and gloo are not comparable)."""
    title = "Allreduce: innet (INA) vs gloo ring"
    cap = caption(doc) + (f"\n{LOOPBACK_NOTE}" if doc["backend"] == "loopback" else "") + absent_note(doc)
    return rich_table(title, COLUMNS, doc["rows"], cap)


def markdown_table(doc: dict[str, Any]) -> str:
    """A saved document's rows as a Markdown table (for docs/benchmarks.md)."""
    note = f"\n\n{LOOPBACK_NOTE}" if doc["backend"] == "loopback" else ""
    return markdown_table_of(COLUMNS, doc["rows"]) + note + absent_note(doc).replace("\n", "\n\n")


def absent_note(doc: dict[str, Any]) -> str:
    """A line per switch implementation that a saved document says was asked for but not installed (no rows)."""
    return "".join(f"\nno {impl} rows: {why}" for impl, why in doc.get("switch_absent", {}).items())


def plot(doc: dict[str, Any], path: Path) -> Path:
    """Time and bytes per worker vs message size, measured and theory, one colour per (collective, N),
    from a saved document (so an old ``bench-*.json`` plots again)."""
    from innet.testbed.core.report import pyplot

    plt = pyplot()

    rows = doc["rows"]
    losses = sorted({r["loss_pct"] for r in rows})
    if not losses:  # interrupted before the first row: the plot says so instead of failing
        fig, ax = plt.subplots(figsize=(6, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, "no rows measured (interrupted before the first)", ha="center", va="center")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path
    fig, axes = plt.subplots(len(losses), 2, figsize=(12, 4.2 * len(losses)), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    keys = sorted({(r["collective"], r["workers"], r.get("switch_impl", "innet")) for r in rows})
    several = len({key[2] for key in keys}) > 1
    for li, loss in enumerate(losses):
        ax_t, ax_b = axes[li]
        for ci, key in enumerate(keys):
            sel = sorted((r for r in rows if (r["collective"], r["workers"], r.get("switch_impl", "innet")) == key
                          and r["loss_pct"] == loss),
                         key=lambda r: r["elements"])
            if not sel:
                continue
            c = colors[ci % len(colors)]
            xs = [r["elements"] for r in sel]
            label = f"{'innet' if key[0] == 'ina' else 'gloo'} N={key[1]}" + (f" ({key[2]})" if several else "")
            ax_t.plot(xs, [r["time_max_s"] * 1e3 for r in sel], "o-", color=c, label=label)
            # theory with a marker: with one message size a line alone would draw nothing
            ax_t.plot(xs, [max(r["theory_time_s"], 1e-6) * 1e3 for r in sel], "x--", color=c, alpha=0.6,
                      label=f"{label} theory")
            if any(r["wire_up"] is not None for r in sel):
                ax_b.plot(xs, [r["wire_up"] or float("nan") for r in sel], "o-", color=c, label=f"{label} sent")
            ax_b.plot(xs, [r["theory_wire"] for r in sel], "x--", color=c, alpha=0.6, label=f"{label} theory")
        for ax, ylabel in ((ax_t, "allreduce time (ms)"), (ax_b, "bytes sent per worker per allreduce")):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("elements (float32)")
            ax.set_ylabel(ylabel)
            ax.set_title(f"loss {loss:g}%")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle("innet INA vs gloo ring allreduce\n" + wrap_caption(caption(doc)), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def wrap_caption(text: str, width: int = 150) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


def save(doc: dict[str, Any], out_dir: Path, stem: str = "bench") -> tuple[Path, Path]:
    """``<stem>-<date>.json`` and ``.png`` in ``out_dir``, from the document (``to_json()`` of a
    record), which is what is written as is."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = doc["date"].replace(":", "").replace("-", "")
    json_path = out_dir / f"{stem}-{stamp}.json"
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    png_path = plot(doc, out_dir / f"{stem}-{stamp}.png")
    return json_path, png_path


__all__ = ["AllreduceBench", "AllreduceFailure", "BenchConfig", "Row", "absent_note", "caption", "markdown_table",
           "measure", "plot", "save", "summarize", "table"]
