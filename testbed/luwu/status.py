"""``innet inspect --optimizer DIR``: the optimizer nodes' state from their status.json files."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


def load(directories: Sequence[Path]) -> list[dict[str, Any]]:
    """Every node's saved ``status.json`` document, as the node wrote it (ValueError naming
    the file when one is missing or garbled)."""
    from innet.host.luwu.node import read_status

    return [read_status(Path(d)) for d in directories]


def render(statuses: list[dict[str, Any]], console: Any) -> None:
    """The ``status.json`` documents of :func:`load` as one table."""
    from rich.table import Table

    table = Table(title="LuWu optimizer nodes")
    for column in ("node", "state", "job/rank", "shard (elements)", "step", "RSS", "working set",
                   "state size", "on disk", "Adam"):
        table.add_column(column)
    mb = lambda b: f"{(b or 0) / 2**20:.2f} MiB"  # noqa: E731
    for s in statuses:
        a, b = s["shard"]
        adam = s.get("adam", {})
        table.add_row(s["name"], s["state"] + (f": {s['error']}" if s.get("error") else ""),
                      f"{s['job']}/{s['rank']}", f"{a}..{b - 1} ({b - a})", str(s["step"]), mb(s["rss_bytes"]),
                      mb(s["bytes_working_set"]), mb(s["bytes_state"]), mb(s["bytes_on_disk"]),
                      f"lr {adam.get('lr')}{' W' if adam.get('decoupled') else ''}")
    console.print(table)
