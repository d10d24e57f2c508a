"""Theoretical times and bytes of an allreduce (docs/design.md, "Benchmarks"), the "theory" columns of ``innet bench``.

Two collectives over a star of ``n`` workers whose links run at ``bw_bps`` each way:

* **ring** (gloo, NCCL): reduce-scatter then all-gather, ``2(n-1)`` steps; every worker
  sends and receives ``2(n-1)/n`` of the message. The payload travels in TCP segments of
  ``mtu - 52`` bytes (IPv4 20 + TCP 20 + timestamps 12) inside ``mtu + 14``-byte frames.
  In a star every step crosses the switch, so each step costs two link latencies.
* **INA** (innet): every worker sends the message once up and receives it once down, in
  ``ceil(S/K)`` packets of ``K`` int32 values (a 62-byte Ethernet/IPv4/UDP/innet header
  plus ``4K`` bytes). Up and down overlap (full duplex, a window of slots), so the link
  bound is one message; the switch must also process ``n`` contributions per chunk, so
  with a packet rate ``switch_pps`` (ingress packets/s) the bound is
  ``max(link, n*ceil(S/K)/switch_pps)``.

Times are lower bounds: no per-packet host cost, no TCP slow start, no retransmission.
With random loss ``p`` per link direction the expected wire bytes grow by ``1/(1-p)``
(every lost frame is sent again); the times here stay the lossless bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from innet.wire import HEADER_LEN, k_for_mtu

ETH_HEADER = 14
"""Ethernet header bytes (no FCS or preamble on veth; HTB counts the frame from here)."""
IPV4_UDP_HEADER = 20 + 8
TCP_OVERHEAD = 20 + 20 + 12
"""IPv4 + TCP + TCP timestamp option bytes in each segment."""
INNET_FRAME_OVERHEAD = ETH_HEADER + IPV4_UDP_HEADER + HEADER_LEN
"""Bytes around the values of one innet packet (62)."""
VALUE_BYTES = 4
"""Bytes per element (float32 in gloo, int32 in innet)."""


@dataclass(frozen=True)
class LinkModel:
    """What the model knows about the star's links and switch."""

    bw_bps: float | None
    """Link rate in bit/s each way; None for unlimited (loopback): only the switch bounds INA."""
    latency_s: float = 0.0
    """One-way host-to-switch latency in seconds."""
    mtu: int = 1500
    """IP MTU of the links (TCP segment size of the ring follows from it)."""
    loss: float = 0.0
    """Random loss probability per link direction (0..1)."""
    switch_pps: float | None = None
    """Packets per second the switch can take in (its measured rate), or None for no switch limit."""

    def __post_init__(self) -> None:
        if self.bw_bps is not None and self.bw_bps <= 0:
            raise ValueError(f"link model bw_bps={self.bw_bps}: must be > 0 or None")
        if not 0 <= self.loss < 1:
            raise ValueError(f"link model loss={self.loss}: must be within 0..1 (1 excluded)")
        if self.mtu < 576:
            raise ValueError(f"link model mtu={self.mtu}: must be >= 576")
        if self.switch_pps is not None and self.switch_pps <= 0:
            raise ValueError(f"link model switch_pps={self.switch_pps}: must be > 0 or None")


@dataclass(frozen=True)
class Estimate:
    """Theoretical cost of one allreduce for one worker."""

    collective: str
    """``ring`` or ``ina``."""
    time_s: float
    """Lower bound on the completion time in seconds (0 when nothing bounds it)."""
    payload_up: int
    """Message bytes a worker sends (the "2(n-1)/n of the message" / "one message" figure)."""
    payload_down: int
    """Message bytes a worker receives."""
    wire_up: float
    """Bytes a worker puts on its link, with headers (and resends under loss)."""
    wire_down: float
    """Bytes a worker's link delivers to it, with headers (and resends under loss)."""
    packets_up: int
    """Frames a worker sends (without resends)."""
    switch_packets: int
    """Frames the switch receives in total for the collective (without resends)."""
    bound: str
    """What sets ``time_s``: ``link``, ``switch`` or ``none``."""


def _check(n: int, elements: int) -> None:
    if n < 2:
        raise ValueError(f"workers={n}: an allreduce needs at least 2 workers")
    if elements < 1:
        raise ValueError(f"elements={elements}: must be >= 1")


def ring_allreduce(n: int, elements: int, net: LinkModel) -> Estimate:
    """Ring allreduce (reduce-scatter + all-gather) of ``elements`` float32 across ``n`` workers."""
    _check(n, elements)
    message = elements * VALUE_BYTES
    payload = math.ceil(2 * (n - 1) * message / n)
    mss = net.mtu - TCP_OVERHEAD
    segments = 2 * (n - 1) * math.ceil(math.ceil(message / n) / mss)
    wire = (payload + segments * (TCP_OVERHEAD + ETH_HEADER)) / (1 - net.loss)
    link_time = wire * 8 / net.bw_bps if net.bw_bps else 0.0
    time = link_time + 2 * (n - 1) * 2 * net.latency_s
    # Every segment crosses the switch once.
    switch_packets = n * segments
    switch_time = switch_packets / net.switch_pps if net.switch_pps else 0.0
    bound = "switch" if switch_time > link_time else ("link" if net.bw_bps else "none")
    return Estimate("ring", max(time, switch_time), payload, payload, wire, wire, segments,
                    switch_packets, bound if max(time, switch_time) > 0 else "none")


def ina_allreduce(n: int, elements: int, k: int | None, net: LinkModel) -> Estimate:
    """innet allreduce of ``elements`` int32 across ``n`` workers, ``k`` values per packet
    (None: the largest K whose frame fits the links' MTU, as the testbed picks it)."""
    _check(n, elements)
    if k is None:
        k = k_for_mtu(net.mtu)
    if k < 1:
        raise ValueError(f"k={k}: must be >= 1")
    chunks = math.ceil(elements / k)
    message = elements * VALUE_BYTES
    frame = INNET_FRAME_OVERHEAD + VALUE_BYTES * k
    if frame - ETH_HEADER > net.mtu:
        raise ValueError(f"k={k}: a {frame - ETH_HEADER}-byte innet packet exceeds mtu {net.mtu}")
    wire = chunks * frame / (1 - net.loss)
    link_time = wire * 8 / net.bw_bps if net.bw_bps else 0.0
    switch_packets = n * chunks
    switch_time = switch_packets / net.switch_pps if net.switch_pps else 0.0
    time = max(link_time + 2 * net.latency_s, switch_time)
    bound = "switch" if switch_time > link_time else ("link" if net.bw_bps else "none")
    return Estimate("ina", time, message, message, wire, wire, chunks, switch_packets,
                    bound if time > 0 else "none")


def goodput_bps(elements: int, time_s: float) -> float:
    """Allreduce goodput: message bits per second of completion time (0 for a zero time)."""
    return elements * VALUE_BYTES * 8 / time_s if time_s > 0 else 0.0
