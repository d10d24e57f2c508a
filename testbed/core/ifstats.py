"""Interface counters of the calling process's network namespace (``/proc/net/dev``, read by psutil).

``/sys/class/net`` shows the namespace that mounted sysfs (the root one, inside a Mininet
host), while ``/proc/net/dev`` is per network namespace of the reader, so workers inside
Mininet hosts read their own ``hI-eth0`` here.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class IfCounters:
    """Cumulative counters of one interface."""

    rx_bytes: int
    rx_packets: int
    tx_bytes: int
    tx_packets: int

    def __sub__(self, other: "IfCounters") -> "IfCounters":
        return IfCounters(self.rx_bytes - other.rx_bytes, self.rx_packets - other.rx_packets,
                          self.tx_bytes - other.tx_bytes, self.tx_packets - other.tx_packets)

    def __add__(self, other: "IfCounters") -> "IfCounters":
        return IfCounters(self.rx_bytes + other.rx_bytes, self.rx_packets + other.rx_packets,
                          self.tx_bytes + other.tx_bytes, self.tx_packets + other.tx_packets)


ZERO = IfCounters(0, 0, 0, 0)


def read(iface: str) -> IfCounters:
    """Counters of ``iface`` in this process's network namespace; KeyError names what exists."""
    table = psutil.net_io_counters(pernic=True)
    try:
        c = table[iface]
    except KeyError:
        raise KeyError(f"interface {iface!r} not in /proc/net/dev (has: {', '.join(sorted(table))})") from None
    return IfCounters(c.bytes_recv, c.packets_recv, c.bytes_sent, c.packets_sent)
