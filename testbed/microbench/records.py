"""The rows of the micro-benchmarks (``innet bench agent|pipeline|p4runtime|veth``), typed until written.

Each benchmark measures into these records and writes ``to_json`` into its document
(``bench_agent.json``, ``bench_pipeline.json``, ``bench_p4runtime.json``, ``bench_veth.json``):
keys in field order, as the documents have always had them, which the tables and plots read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from innet.testbed.core.machine import Machine
from innet.testbed.core.records import JsonRecord


def _listed(record: Any) -> dict[str, Any]:
    """A record's fields with its tuples as JSON lists."""
    return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(record).items()}


@dataclass(frozen=True)
class AgentRow(JsonRecord):
    """One (K, datapath) of ``innet bench agent``: a host agent through the C echo switch."""

    datapath: str
    """``python`` or ``native``."""
    k: int
    window: int
    values: int
    """int32 values per operation."""
    rounds: int
    chunks_per_s: int
    chunks_per_cpu_s: int
    """Chunks per CPU-second of this process (the agent runs in it)."""
    values_per_s: int
    retransmitted: int
    quantize_values_per_s: int
    """The codec's float32 -> fixed-point quantization alone."""


@dataclass(frozen=True)
class ExecutorRow:
    """One workload of ``innet bench pipeline``: the P4 executor alone, on one core."""

    workload: str
    program: str
    """The P4 source, relative to the repository."""
    packets_used: str
    """What the benchmark packets are."""
    bytes_per_packet: int
    pkt_per_s: int
    pkt_per_cpu_s: int
    values_per_s: int
    values_per_packet: int
    packets: int
    """Packets processed over all rounds."""
    rounds: int
    round_pkt_per_cpu_s: tuple[int, ...]
    elements_per_cpu_s: int
    executor_alone_pkt_per_cpu_s: int | None
    """The native executor without the Python around it; None for the Python executor."""
    round_executor_alone_pkt_per_cpu_s: tuple[int, ...]
    executor_alone_elements_per_cpu_s: int | None
    batch_packets: int
    executor: str
    target_pkt_per_s: int
    meets_target: bool
    meets_target_cpu: bool
    target_elements_per_cpu_s: int
    meets_element_target: bool | None
    """None where the workload has no element target."""

    def to_json(self) -> dict[str, Any]:
        return _listed(self)


@dataclass(frozen=True)
class WriteRow(JsonRecord):
    """One (operation, batch size) of ``innet bench p4runtime``'s Write benchmark."""

    op: str
    """``INSERT`` or ``DELETE``."""
    batch: int
    """Updates per Write request."""
    entries: int
    rounds: int
    seconds: float
    entries_per_s: int


@dataclass(frozen=True)
class PacketRow(JsonRecord):
    """One offered rate of ``innet bench p4runtime``'s packets through innet-switch on veths."""

    frame_bytes: int
    offered_pkt_per_s: int | str
    """The rate the sender held to, or ``max`` (as fast as it goes)."""
    sent: int
    send_rate: int
    received: int
    loss: float
    forwarded_pkt_per_s: int
    switch_cpu_s: float
    pkt_per_switch_cpu_s: int
    switch_cpu_util: float
    """The switch process's CPU seconds over the sending time."""


@dataclass(frozen=True)
class SenderCounts:
    """What the C sender reports of one point (its last stdout line, JSON)."""

    pps: float
    """Frames per second that came back."""
    sent: int
    received: int
    reprimes: int
    """Times it found nothing in flight for 20 ms and sent the window again."""

    @classmethod
    def from_json(cls, doc: Any) -> SenderCounts:
        return cls(pps=doc["pps"], sent=doc["sent"], received=doc["received"], reprimes=doc["reprimes"])


@dataclass(frozen=True)
class Point(JsonRecord):
    """One measurement: a device under test on the veth, one workload."""

    workload: str
    device: str
    """``reflector``, ``ring reflector``, ``innet-switch`` or ``simple_switch_grpc``."""
    frame_bytes: int
    pps: float
    sent: int
    received: int
    reprimes: int
    """Times the sender found nothing in flight for 20 ms and sent the window again."""
    loop: dict[str, float] | None = None
    """innet-switch's C port loop (when it served the port): frames per batch and the
    loop's nanoseconds per frame by stage (its ``pio_stats`` over the whole run)."""


@dataclass(frozen=True)
class VethRow:
    """One (workload, switch) of ``innet bench veth``: medians over the rounds and each round's figures."""

    workload: str
    switch: str
    """``innet-switch`` or ``simple_switch_grpc``."""
    frame_bytes: int
    mtu: int
    ceiling_pps: int
    """The C reflector's rate on the same veth (the ceiling)."""
    ring_ceiling_pps: int
    """The C reflector receiving through an RX ring, as innet-switch does."""
    switch_pps: int
    ratio: float
    """Median of the rounds' switch / ceiling."""
    round_ratios: tuple[float, ...]
    ring_ratio: float
    round_ring_ratios: tuple[float, ...]
    round_ceiling_pps: tuple[int, ...]
    round_ring_ceiling_pps: tuple[int, ...]
    round_switch_pps: tuple[int, ...]
    loop: dict[str, float] | None
    """innet-switch's C port loop stats of the median round (None: it did not serve the port)."""

    def to_json(self) -> dict[str, Any]:
        return _listed(self)


@dataclass(frozen=True)
class VethBench:
    """One ``innet bench veth`` run: every point measured and the rows made of them."""

    date: str
    machine: Machine
    """:func:`innet.testbed.core.machine.describe`."""
    executor: str
    """innet-switch's ``--executor``, or ``default``."""
    port_loop: str
    settings: dict[str, Any]
    """The run's :class:`~innet.testbed.microbench.veth.VethBenchConfig` as JSON."""
    points: tuple[Point, ...]
    rows: tuple[VethRow, ...]
    switch_absent: dict[str, str]
    """Switch implementations asked for but not installed: name -> why."""
    partial: bool
    """Ctrl-C ended the run; the rows are those of complete rounds."""

    FORMAT = "innet-bench-veth/1"

    def to_json(self) -> dict[str, Any]:
        return {"format": self.FORMAT, "date": self.date, "machine": self.machine.to_json(), "executor": self.executor,
                "port_loop": self.port_loop, "settings": self.settings, "points": [p.to_json() for p in self.points],
                "rows": [r.to_json() for r in self.rows], "switch_absent": self.switch_absent,
                "partial": self.partial}
