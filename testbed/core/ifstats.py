"""Interface counters of the calling process's network namespace (``/proc/net/dev``).

``/sys/class/net`` shows the namespace that mounted sysfs (the root one, inside a Mininet
host), while ``/proc/net/dev`` is per network namespace of the reader, so workers inside
Mininet hosts read their own ``hI-eth0`` here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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


def parse_proc_net_dev(text: str) -> dict[str, IfCounters]:
    """Every interface of a ``/proc/net/dev`` text."""
    out = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        f = rest.split()
        out[name.strip()] = IfCounters(int(f[0]), int(f[1]), int(f[8]), int(f[9]))
    return out


def read(iface: str, path: Path = Path("/proc/net/dev")) -> IfCounters:
    """Counters of ``iface`` in this process's network namespace; KeyError names what exists."""
    table = parse_proc_net_dev(path.read_text())
    try:
        return table[iface]
    except KeyError:
        raise KeyError(f"interface {iface!r} not in {path} (has: {', '.join(sorted(table))})") from None
