"""Every benchmark plot, drawn from small synthetic results, can be read: no two labels
overlap or leave the figure (tick labels, axis labels, titles, annotations, legends), and
every legend entry stands for something drawn. The checks themselves are tested first, on
figures made to fail them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure

from innet.testbed.core.report import pyplot

from testkit.plots import check_figure, keep_figures, text_overlaps, undrawn_legend_entries

MACHINE = {"host": "vm", "cpu": "AMD EPYC 7B13 64-Core Processor", "cores": 2}
SWITCH = "innet-switch (embedded P4 target, native executor)"


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    return keep_figures(monkeypatch)


def _only(figures: list[Figure]) -> Figure:
    assert len(figures) == 1
    return figures[0]


# -- the checks --------------------------------------------------------------------------


def test_crowded_tick_labels_and_a_tall_label_are_found() -> None:
    fig, ax = pyplot().subplots(figsize=(3, 2))
    ax.set_xticks(range(12), [f"cluster {i}" for i in range(12)])
    ax.set_ylabel("a y label much longer than the axes is tall, so it leaves the figure")
    fig.suptitle("title")
    problems = text_overlaps(fig)
    assert any("x tick 'cluster 0' overlaps axes 0 x tick 'cluster 1'" in p for p in problems)
    assert any("y label" in p and "cut by the figure's edge" in p for p in problems)


def test_legend_entry_of_a_one_point_dashed_line_is_not_drawn() -> None:
    fig, ax = pyplot().subplots()
    ax.plot([1], [2], "o-", label="measured")
    ax.plot([1], [3], "--", label="theory")
    ax.bar([0, 1], [0, 0], label="zero bars")
    ax.legend()
    assert undrawn_legend_entries(fig) == ["axes 0 legend entry 'theory' is not drawn",
                                           "axes 0 legend entry 'zero bars' is not drawn"]


def test_a_readable_figure_passes() -> None:
    fig, ax = pyplot().subplots(figsize=(6, 3))
    ax.plot([1, 2, 3], [1, 4, 9], "o-", label="squares")
    ax.set_xlabel("n")
    ax.set_ylabel("n squared")
    ax.legend()
    fig.tight_layout()
    assert check_figure(fig) == []


# -- the benchmarks' plots ---------------------------------------------------------------


def _luwu_doc(on_link: bool) -> dict[str, Any]:
    rows = []
    for n in (2, 3, 4):
        for mode, ms in (("ddp-gloo", 900), ("ddp-innet", 700), ("fsdp", 1200), ("luwu", 500),
                         ("luwu (serialized)", 650)):
            row = {"mode": mode, "workers": n, "step_ms": ms * n / 2, "step_ms_p90": ms * n * 0.6,
                   "bytes_per_worker_step": 8e6, "worker_tensor_bytes_peak": 2e7 * n}
            if on_link:
                row.update(link_up_bytes_per_step=4e6 * n, link_down_bytes_per_step=3e6 * n)
            rows.append(row)
    return {"rows": rows, "machine": MACHINE, "settings": {"model": "mlp-4M", "batch": 32, "k": 256, "window": 64},
            "backend": "mininet", "switch": SWITCH, "load_average_start": "6.7 5.6 3.2",
            "load_average_end": "7.1 6.0 3.5"}


@pytest.mark.parametrize("on_link", [True, False])
def test_bench_luwu_labels_stay_clear_of_the_title(figures: list[Figure], tmp_path: Path, on_link: bool) -> None:
    from innet.testbed.luwu.bench import plot

    plot(_luwu_doc(on_link), tmp_path / "luwu.png")
    assert check_figure(_only(figures)) == []


def _veth_doc() -> dict[str, Any]:
    rows = []
    for workload, frame in (("basic_forward", 64), ("agg64", 318), ("agg256", 1086)):
        for switch, pps in (("innet-switch", 6.4e5), ("simple_switch_grpc", 2.1e4)):
            rows.append({"workload": workload, "frame_bytes": frame, "switch": switch, "ceiling_pps": 1.0e6,
                         "ring_ceiling_pps": 1.4e6, "switch_pps": pps, "ratio": pps / 1.0e6})
    return {"rows": rows, "executor": "native", "machine": MACHINE, "settings": {"window": 16, "mtu": 1500}}


def test_bench_veth_bars_are_linear_where_ratios_are_shown(figures: list[Figure], tmp_path: Path) -> None:
    from innet.testbed.microbench.veth import save

    save(_veth_doc(), tmp_path)
    fig = _only(figures)
    assert check_figure(fig) == []
    ax = fig.axes[0]
    assert ax.get_yscale() == "linear"  # bar heights compare as the ratios printed on them
    assert [t.get_text() for t in ax.texts] == ["0.64x", "0.02x"] * 3


def test_bench_veth_without_ring_numbers_lists_no_ring_bars(figures: list[Figure], tmp_path: Path) -> None:
    from innet.testbed.microbench.veth import save

    doc = _veth_doc()
    for row in doc["rows"]:
        del row["ring_ceiling_pps"]
    save(doc, tmp_path)
    fig = _only(figures)
    assert check_figure(fig) == []
    assert "C reflector, RX ring" not in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


@pytest.mark.parametrize(("start", "end"), [(0.8, 7.5), (0.25, 2.2), (12.0, 95.0), (150.0, 900.0)])
def test_geo_time_axis_labels_do_not_overlap(figures: list[Figure], tmp_path: Path, start: float,
                                             end: float) -> None:
    from innet.testbed.geo.bench import plot

    t = np.geomspace(start, end, 30)
    rows = [{"placement": placement, "compression": compression,
             "loss_curve": [[float(x), 2.3 / (1 + i)] for i, x in enumerate(t)],
             "accuracy_curve": [[float(x), i, 0.5 + 0.05 * i] for i, x in enumerate(t[::5])]}
            for placement in ("opfence", "uniform") for compression in ("none", "topk")]
    doc = {"rows": rows, "machine": MACHINE,
           "settings": {"task": "mnist-mlp", "microbatches": 4, "batch": 32, "replicas": 2, "target_accuracy": 0.8,
                        "testbed": "loopback", "wan_emulation": "transport: shaped"}}
    plot(doc, tmp_path / "geo.png")
    fig = _only(figures)
    assert check_figure(fig) == []
    ticks = [t.get_text() for t in fig.axes[0].xaxis.get_majorticklabels()]
    assert all("times" not in t and "\\" not in t for t in ticks)  # plain numbers, not 2x10^0


def _ina_doc(sizes: tuple[int, ...], workers: tuple[int, ...]) -> dict[str, Any]:
    rows = [{"collective": collective, "workers": n, "elements": e, "loss_pct": 0.0,
             "time_max_s": scale * 1e-3 * e / 1024, "theory_time_s": 5e-4 * e / 1024,
             "wire_up": scale * 4.4 * e, "theory_wire": 4.2 * e, "switch_impl": "innet"}
            for collective, scale in (("ina", 1.0), ("gloo", 1.7)) for n in workers for e in sizes]
    return {"rows": rows, "machine": MACHINE, "backend": "loopback", "switch": SWITCH,
            "settings": {"k": 256, "mtu": 1500, "window": 16, "workers": list(workers), "sizes": list(sizes),
                         "bw_mbps": 0, "losses": [0.0]}}


@pytest.mark.parametrize(("sizes", "workers"), [((1024,), (2,)), ((1024, 65536, 1 << 20), (2, 4))])
def test_demo_bench_draws_every_line_its_legend_lists(figures: list[Figure], tmp_path: Path,
                                                      sizes: tuple[int, ...], workers: tuple[int, ...]) -> None:
    from innet.testbed.ina.bench import plot

    plot(_ina_doc(sizes, workers), tmp_path / "bench.png")
    fig = _only(figures)
    assert check_figure(fig) == []
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "innet N=2 theory" in legend


def test_model_cost_cluster_labels_do_not_overlap(figures: list[Figure], tmp_path: Path) -> None:
    from innet.testbed.rail.models import netcost
    from innet.testbed.rail.models.report import cost_rows, save

    rows = cost_rows(netcost.TABLE2_CLUSTERS, netcost.PUBLIC_PARTS)
    assert len(rows) >= 18  # the whole Table II grid, the crowded case
    save({"model": "cost", "rows": [r.to_json() for r in rows]}, tmp_path, "cost")
    assert check_figure(_only(figures)) == []
