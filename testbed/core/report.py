"""Benchmark tables: one column spec per table, rendered to a rich Table for the terminal and
to Markdown for the docs, so the two never list different columns or formats."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

Row = dict[str, Any]
"""A row as a saved document holds it (a record's ``to_json``): tables render the saved JSON,
so a saved file can be rendered again."""


@dataclass(frozen=True)
class Column:
    """One column of a benchmark table."""

    header: str
    """Its heading (the same in the terminal and in Markdown)."""
    cell: Callable[[Row], str]
    """The row's cell as plain text."""
    align: str = "right"
    """``left`` or ``right``."""
    alarm: Callable[[Row], bool] | None = None
    """When true for a row, the terminal shows the cell in red (Markdown shows it as is)."""


def rich_table(title: str, columns: Sequence[Column], rows: Iterable[Row], caption: str | None = None) -> Any:
    """A rich ``Table`` of ``rows`` (cells are plain text: no markup is interpreted)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, caption=caption, caption_justify="left")
    for column in columns:
        table.add_column(column.header, justify="left" if column.align == "left" else "right")
    for row in rows:
        cells = []
        for column in columns:
            text = Text(column.cell(row))
            if column.alarm is not None and column.alarm(row):
                text.stylize("red")
            cells.append(text)
        table.add_row(*cells)
    return table


def markdown_table(columns: Sequence[Column], rows: Iterable[Row]) -> str:
    """``rows`` as a Markdown table (pipes in cells escaped)."""
    lines = ["| " + " | ".join(c.header for c in columns) + " |",
             "|" + "|".join("---" if c.align == "left" else "---:" for c in columns) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(c.cell(row).replace("|", "\\|") for c in columns) + " |")
    return "\n".join(lines)


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files only, no display). The font manager's
    "font family not found" warnings are silenced: Mininet's logger class makes every logger
    created after its import print to the terminal, and matplotlib's lookup of optional
    mathtext fonts it falls back from is not something a benchmark's user can act on.
    Raises ImportError without matplotlib."""
    import logging

    import matplotlib

    matplotlib.use("Agg")
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    import matplotlib.pyplot as plt

    return plt


def plain_log_ticks(axis: Any) -> None:
    """Label a log-scale ``axis`` at 1, 2 and 5 times each power of ten with plain numbers
    (``0.5 1 2 5 10``) and no minor labels: matplotlib's ``2x10^0 3x10^0 4x10^0`` labels of a
    range under two decades run into each other."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def save_json(out_dir: Path, name: str, doc: Any) -> Path:
    """Write a run's results as ``out_dir/<name>-<YYYYmmdd-HHMMSS>.json`` (the directory made if
    needed): the stamp keeps one run from overwriting another's."""
    import datetime as dt
    import json

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path
