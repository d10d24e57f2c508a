"""An optimizer node's ``status.json``, read into a record; ``innet inspect --optimizer DIR``.

The node (:mod:`innet.host.luwu.node`) owns the file's format and writes it after every step;
this is where the testbed reads it, once, into :class:`NodeStatus`, so training runs, the
demo and the benchmark read fields. ``to_json`` gives the document back as the node wrote it
(keys, order, lists), which is what the demo saves and ``innet inspect --json`` prints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # imported when a file is read: the CLI starts without numpy
    from innet.host.luwu.ooc_adam import AdamConfig

NODE_FORMAT = "innet-optimizer-node/1"


@dataclass(frozen=True)
class NodeStatus:
    """One optimizer node's last status (the fields of its ``status.json``, in its order)."""

    format: str
    name: str
    pid: int
    state: str
    """``running``, ``done`` or ``failed``."""
    error: str | None
    job: int
    rank: int
    shard: tuple[int, int]
    """This node's elements ``[start, stop)`` of the model."""
    shards: tuple[tuple[int, int], ...]
    nodes: tuple[str, ...]
    step: int
    """Adam steps applied (the state's step)."""
    adam: AdamConfig
    bytes_on_disk: int
    bytes_state: int
    bytes_working_set: int
    rss_bytes: int
    seconds: dict[str, float]
    """Time in Adam and in communication (``adam``, ``comm``)."""
    updated: float
    """``time.time()`` of the write."""
    agent_stats: dict[str, int | float]
    """The node's agent's counters of its last operation; empty before the first."""

    @classmethod
    def read(cls, directory: Path) -> NodeStatus:
        """The status in ``directory``; ValueError naming the file when it is missing, garbled
        or not a node's status of this format."""
        from innet.host.luwu.node import STATUS_FILE, read_status

        return cls.from_json(read_status(directory), f"optimizer node status {Path(directory) / STATUS_FILE}")

    @classmethod
    def from_json(cls, doc: dict[str, Any], where: str = "optimizer node status") -> NodeStatus:
        """The record of a parsed ``status.json``; ValueError naming ``where`` and the key that
        does not fit (a document of another format, a missing or unknown key)."""
        from innet.host.luwu.ooc_adam import AdamConfig

        names = list(cls.__dataclass_fields__)
        if not isinstance(doc, dict) or doc.get("format") != NODE_FORMAT:
            found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise ValueError(f"{where}: format {found!r}, expected {NODE_FORMAT!r}")
        missing = [k for k in names if k not in doc]
        unknown = [k for k in doc if k not in names]
        if missing or unknown:
            raise ValueError(f"{where}: " + (f"no key {missing[0]!r}" if missing else f"unknown key {unknown[0]!r}"))
        shard = doc["shard"]
        if not (isinstance(shard, list) and len(shard) == 2):
            raise ValueError(f"{where}: shard {shard!r}, expected [start, stop]")
        try:
            return cls(**{**doc, "shard": (int(shard[0]), int(shard[1])),
                          "shards": tuple((int(a), int(b)) for a, b in doc["shards"]),
                          "nodes": tuple(str(n) for n in doc["nodes"]), "adam": AdamConfig(**doc["adam"]),
                          "seconds": dict(doc["seconds"]), "agent_stats": dict(doc["agent_stats"])})
        except (TypeError, ValueError) as error:
            raise ValueError(f"{where}: {error}") from None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "shard": list(self.shard), "shards": [list(s) for s in self.shards],
                "nodes": list(self.nodes)}


@dataclass(frozen=True)
class UnreadNodeStatus:
    """A node whose status could not be read after the run (saved as ``{"error": ...}``)."""

    error: str

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error}


def load(directories: Sequence[Path]) -> list[NodeStatus]:
    """Every node's status (ValueError naming the file when one is missing or garbled)."""
    return [NodeStatus.read(Path(d)) for d in directories]


def render(statuses: Sequence[NodeStatus], console: Any) -> None:
    """The statuses as one table."""
    from rich.table import Table

    table = Table(title="LuWu optimizer nodes")
    for column in ("node", "state", "job/rank", "shard (elements)", "step", "RSS", "working set",
                   "state size", "on disk", "Adam"):
        table.add_column(column)
    mb = lambda b: f"{b / 2**20:.2f} MiB"  # noqa: E731
    for s in statuses:
        a, b = s.shard
        table.add_row(s.name, s.state + (f": {s.error}" if s.error else ""),
                      f"{s.job}/{s.rank}", f"{a}..{b - 1} ({b - a})", str(s.step), mb(s.rss_bytes),
                      mb(s.bytes_working_set), mb(s.bytes_state), mb(s.bytes_on_disk),
                      f"lr {s.adam.lr}{' W' if s.adam.decoupled else ''}")
    console.print(table)
