"""State inspection of one switch: jobs, slot occupancy, counters and register ranges,
as a value (:class:`SwitchReport`), JSON, or rich tables.  Read-only: it works from a
session without an election id, next to a running controller.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Sequence

from innet.controller.errors import SchemaError, ValueRangeError
from innet.controller.innet_switch import InnetSwitch, Occupancy
from innet.controller.jobs import InnetLayout, JobInfo
from innet.controller.switch import Switch


@dataclass(frozen=True)
class RegisterDump:
    name: str
    """Full register name."""
    start: int
    """Index of ``values[0]``."""
    values: tuple[int, ...]
    bitwidth: int


@dataclass(frozen=True)
class SwitchReport:
    address: str
    layout: InnetLayout | None
    """None when the pipeline is not innet.p4 (then only registers are shown)."""
    jobs: tuple[JobInfo, ...] = ()
    occupancy: tuple[Occupancy, ...] = ()
    counters: dict[str, dict[int, int]] = field(default_factory=dict)
    registers: tuple[RegisterDump, ...] = ()

    def to_json(self) -> dict[str, Any]:
        layout = None
        if self.layout is not None:
            layout = {k: getattr(self.layout, k) for k in ("k", "slots", "param_chunks", "max_jobs")}
        return {
            "switch": self.address,
            "layout": layout,
            "jobs": [dataclasses.asdict(j) for j in self.jobs],
            "occupancy": [{k: v for k, v in dataclasses.asdict(o).items() if k != "contributors"}
                          for o in self.occupancy],
            "counters": {name: {str(i): n for i, n in cells.items()} for name, cells in self.counters.items()},
            "registers": [{"name": r.name, "start": r.start, "values": list(r.values)} for r in self.registers],
        }


def parse_range(text: str, size: int | None = None) -> range:
    """``A:B`` (B exclusive), ``A:`` (to the end, needs size), ``:B``, or a single index ``A``."""
    try:
        if ":" not in text:
            i = int(text, 0)
            return range(i, i + 1)
        a, _, b = text.partition(":")
        start = int(a, 0) if a else 0
        if b:
            return range(start, int(b, 0))
        if size is None:
            raise ValueRangeError(f"range {text!r}: open end needs the register size")
        return range(start, size)
    except ValueError:
        raise ValueRangeError(f"range {text!r}: expected A:B, A:, :B or an index") from None


def inspect_switch(switch: Switch, registers: Sequence[tuple[str, str | None]] = (),
                   job_id: int | None = None) -> SwitchReport:
    """Jobs (all, or ``job_id``), occupancy and counters when the pipeline is innet.p4,
    plus each (register name, range text or None = all) in ``registers``."""
    dumps = []
    for name, text in registers:
        info = switch.schema.register(name)
        rng = range(info.size) if text is None else parse_range(text, info.size)
        dumps.append(RegisterDump(info.name, rng.start, tuple(switch.read_register(info.name, rng)), info.bitwidth))
    node = InnetSwitch(switch)
    try:
        layout = node.layout
    except SchemaError:
        return SwitchReport(switch.spec.address, None, registers=tuple(dumps))
    jobs = tuple(j for j in node.jobs() if job_id is None or j.job_id == job_id)
    if job_id is not None and not jobs:
        node.job(job_id)  # raises JobError naming the jobs present
    occupancy = tuple(node.occupancy(j.job_id) for j in jobs)
    counters = node.counters(job_id)
    if job_id is None:  # only indexes that are jobs or show traffic (index 0: unknown jobs)
        ids = {j.job_id for j in jobs}
        counters = {n: {i: v for i, v in c.items() if i in ids or v} for n, c in counters.items()}
    return SwitchReport(switch.spec.address, layout, jobs, occupancy, counters, tuple(dumps))


def render(report: SwitchReport, console: Any) -> None:
    """Print ``report`` as rich tables on a ``rich.console.Console``."""
    from rich.table import Table

    if report.layout is not None:
        lay = report.layout
        console.print(f"switch {report.address}: innet.p4 K={lay.k}, {lay.slots} slots, "
                      f"{lay.param_chunks} parameter chunks, job ids 1..{lay.max_jobs - 1}")
        jobs = Table(title="jobs (innet_jobs)")
        for col in ("job", "mode", "workers", "mcast", "slots", "params", "lr >> shift", "beta >> shift"):
            jobs.add_column(col, justify="right")
        for j in report.jobs:
            jobs.add_row(str(j.job_id), j.mode, str(j.num_workers), str(j.mcast_grp),
                         f"{j.slot_base}+{j.slot_count}", f"{j.param_base}+{j.param_chunks}",
                         f"{j.lr} >> {j.lr_shift}", f"{j.beta} >> {j.beta_shift}")
        console.print(jobs)
        occ = Table(title="slot copies")
        for col in ("job", "copies", "idle", "busy", "complete"):
            occ.add_column(col, justify="right")
        for o in report.occupancy:
            occ.add_row(str(o.job_id), str(o.copies), str(o.idle), str(o.busy), str(o.complete))
        console.print(occ)
        counters = Table(title="counters (packets)")
        counters.add_column("index", justify="right")
        names = list(report.counters)
        for n in names:
            counters.add_column(n.removeprefix("innet_"), justify="right")
        indexes = sorted({i for cells in report.counters.values() for i in cells})
        for i in indexes:
            counters.add_row(str(i), *(str(report.counters[n].get(i, 0)) for n in names))
        console.print(counters)
    else:
        console.print(f"switch {report.address}: pipeline is not innet.p4")
    for r in report.registers:
        table = Table(title=f"{r.name} [{r.start}:{r.start + len(r.values)}] (bit<{r.bitwidth}>)")
        table.add_column("index", justify="right")
        table.add_column("value", justify="right")
        table.add_column("hex", justify="right")
        for i, v in enumerate(r.values):
            table.add_row(str(r.start + i), str(v), hex(v))
        console.print(table)
