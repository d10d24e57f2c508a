"""Checks of a rendered matplotlib figure that a reader would otherwise make by eye: no two
pieces of text overlap (tick labels, axis labels, titles, the suptitle, annotations, legends),
none is cut off by the figure's edge, and every legend entry names something that is drawn
(a one-point dashed line draws nothing, a zero bar on a log axis neither).

    fig = ...  # the benchmark's figure, or open the PNG's figure before savefig
    assert text_overlaps(fig) == []
    assert undrawn_legend_entries(fig) == []

Extents come from the renderer after a full draw (``fig.canvas.draw()``), so what is
compared is what the saved PNG shows at the figure's dpi.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import Collection
from matplotlib.container import BarContainer, Container, ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox

TOLERANCE_PX = 1.0
"""Boxes that share less than this many pixels in either direction only touch."""


@dataclass(frozen=True)
class Label:
    """One piece of text as drawn: what it is, where, and in which group (texts of one
    group, e.g. one legend, are laid out together and not compared with each other)."""

    what: str
    box: Bbox
    group: str


def _visible(t: Text) -> bool:
    return t.get_visible() and bool(t.get_text().strip()) and t.get_alpha() != 0


def _ticks_drawn(axis: Any) -> list[Text]:
    """Tick labels the axis draws now (those of ticks inside the view interval)."""
    out: list[Text] = []
    for tick in axis._update_ticks():  # the ticks Axis.draw draws; public API lists all of them
        out += [t for t in (tick.label1, tick.label2) if t.get_visible()]
    return out


def labels(fig: Figure) -> list[Label]:
    """Every visible piece of text of ``fig``, drawn at its dpi."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    found: list[Label] = []

    def add(t: Text, what: str, group: str) -> None:
        if _visible(t):
            found.append(Label(f"{what} {t.get_text()!r}", t.get_window_extent(renderer), group))

    for i, ax in enumerate(fig.axes):
        name = f"axes {i}" + (f" ({ax.get_title()!r})" if ax.get_title() else "")
        for axis, which in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            for t in _ticks_drawn(axis):
                add(t, f"{name} {which} tick", f"{name} {which} tick {t.get_text()}")
            add(axis.label, f"{name} {which} label", f"{name} {which} label")
            offset = axis.get_offset_text()
            add(offset, f"{name} {which} offset", f"{name} {which} offset")
        for title in (ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)):
            if isinstance(title, Text):
                add(title, f"{name} title", f"{name} title")
        for j, t in enumerate(ax.texts):
            add(t, f"{name} text", f"{name} text {j}")
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            found.append(Label(f"{name} legend", legend.get_window_extent(renderer), f"{name} legend"))
    for j, legend in enumerate(fig.legends):
        found.append(Label("figure legend", legend.get_window_extent(renderer), f"figure legend {j}"))
    suptitle = getattr(fig, "_suptitle", None)  # the Text; Figure.get_suptitle gives only its string
    if isinstance(suptitle, Text):
        add(suptitle, "suptitle", "suptitle")
    for j, t in enumerate(fig.texts):
        if t is not suptitle:  # the suptitle is one of the figure's texts too
            add(t, "figure text", f"figure text {j}")
    return found


def _overlap(a: Bbox, b: Bbox) -> tuple[float, float]:
    return min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0)


def text_overlaps(fig: Figure, tolerance: float = TOLERANCE_PX) -> list[str]:
    """One line per pair of texts that overlap, and per text the figure's edge cuts; [] when
    every label can be read."""
    found = labels(fig)
    problems: list[str] = []
    for i, a in enumerate(found):
        for b in found[i + 1:]:
            if a.group == b.group:
                continue
            dx, dy = _overlap(a.box, b.box)
            if dx > tolerance and dy > tolerance:
                problems.append(f"{a.what} overlaps {b.what} by {dx:.0f}x{dy:.0f} px")
    edge = fig.bbox
    for a in found:
        if (a.box.x0 < edge.x0 - tolerance or a.box.y0 < edge.y0 - tolerance
                or a.box.x1 > edge.x1 + tolerance or a.box.y1 > edge.y1 + tolerance):
            box = ", ".join(f"{v:.0f}" for v in a.box.extents)
            problems.append(f"{a.what} is cut by the figure's edge (x0, y0, x1, y1 = {box} px; the figure is "
                            f"{edge.width:.0f}x{edge.height:.0f})")
    return problems


def _finite_points(line: Line2D) -> np.ndarray:
    xy = np.column_stack([np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)])
    ax = line.axes
    keep = np.isfinite(xy).all(axis=1)
    if ax is not None:
        if ax.get_xscale() == "log":
            keep &= xy[:, 0] > 0
        if ax.get_yscale() == "log":
            keep &= xy[:, 1] > 0
    return keep


def draws_something(artist: Artist | Container) -> bool:
    """Whether ``artist`` puts ink on its axes: a line with two consecutive finite points (or
    one with a marker), a bar of non-zero height (positive on a log axis), a non-empty
    collection, a visible patch."""
    if isinstance(artist, ErrorbarContainer):
        data_line = artist.lines[0]
        return data_line is not None and draws_something(data_line)
    if isinstance(artist, BarContainer):
        return any(draws_something(p) for p in artist.patches)
    if isinstance(artist, Container):
        return any(draws_something(c) for c in artist.get_children())
    if not artist.get_visible() or artist.get_alpha() == 0:
        return False
    if isinstance(artist, Line2D):
        keep = _finite_points(artist)
        marker = artist.get_marker()
        if marker not in (None, "", " ", "None", "none") and keep.any():
            return True
        return artist.get_linestyle() not in ("None", "", " ") and bool((keep[1:] & keep[:-1]).any())
    if isinstance(artist, Patch):
        if isinstance(artist, Rectangle):
            h = artist.get_height()
            ax = artist.axes
            if not math.isfinite(h) or h == 0:
                return False
            if ax is not None and ax.get_yscale() == "log" and artist.get_y() + h <= 0:
                return False
        return True
    if isinstance(artist, Collection):
        return len(np.asarray(artist.get_offsets())) > 0 or len(artist.get_paths()) > 0
    return True


def _legends(fig: Figure) -> Iterator[tuple[str, Legend, list[tuple[Any, str]]]]:
    for i, ax in enumerate(fig.axes):
        legend = ax.get_legend()
        if legend is not None:
            handles, texts = ax.get_legend_handles_labels()
            yield f"axes {i}", legend, list(zip(handles, texts))
    for j, legend in enumerate(fig.legends):
        pairs: list[tuple[Any, str]] = []
        for ax in fig.axes:
            handles, texts = ax.get_legend_handles_labels()
            pairs += list(zip(handles, texts))
        yield f"figure legend {j}", legend, pairs


def undrawn_legend_entries(fig: Figure) -> list[str]:
    """One line per legend entry whose artists draw nothing (or that names no artist); []
    when every entry stands for something on the plot."""
    fig.canvas.draw()
    problems: list[str] = []
    for where, legend, pairs in _legends(fig):
        for text in legend.get_texts():
            label = text.get_text()
            artists = [h for h, lab in pairs if lab == label]
            if not artists:
                problems.append(f"{where} legend entry {label!r} names no artist")
            elif not any(draws_something(a) for a in artists):
                problems.append(f"{where} legend entry {label!r} is not drawn")
    return problems


class _KeepFigures:
    """pyplot, except that ``close(fig)`` keeps ``fig`` for the test to check."""

    def __init__(self, plt: Any) -> None:
        self._plt = plt
        self.figures: list[Figure] = []

    def close(self, fig: Any = None) -> None:
        if isinstance(fig, Figure):
            self.figures.append(fig)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._plt, name)


def keep_figures(monkeypatch: Any) -> list[Figure]:
    """Make every benchmark plot (through ``innet.testbed.core.report.pyplot``) keep the
    figures it saves and closes: the list fills as plots are made."""
    import innet.testbed.core.report as report

    keeper = _KeepFigures(report.pyplot())
    monkeypatch.setattr(report, "pyplot", lambda: keeper)
    return keeper.figures


def check_figure(fig: Figure) -> list[str]:
    """Everything :func:`text_overlaps` and :func:`undrawn_legend_entries` find."""
    return text_overlaps(fig) + undrawn_legend_entries(fig)


__all__ = ["Label", "check_figure", "draws_something", "keep_figures", "labels", "text_overlaps",
           "undrawn_legend_entries"]
