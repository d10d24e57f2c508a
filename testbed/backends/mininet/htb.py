"""How Mininet's ``TCLink`` shapes a link with HTB, for code that changes that shaping later.

``TCIntf.bwCmds`` gives each shaped interface a root ``htb`` qdisc ``5:0`` (default class 1)
and one class ``5:1`` at the link's rate with a 15 kB burst; everything the interface sends
goes through that class.
"""

from __future__ import annotations

ROOT = "5:0"
RATE_CLASS = "5:1"
BURST = "15k"


def rate_command(iface: str, mbps: float) -> list[str]:
    """``tc`` argv that sets ``iface``'s link rate to ``mbps`` (the same class, burst as Mininet's)."""
    return ["tc", "class", "change", "dev", iface, "parent", ROOT, "classid", RATE_CLASS, "htb",
            "rate", f"{mbps:g}mbit", "burst", BURST]


__all__ = ["BURST", "RATE_CLASS", "ROOT", "rate_command"]
