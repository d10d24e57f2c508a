"""The one place that decides where a topology comes up: Mininet as root, loopback otherwise.

``backend="auto"`` resolves here for every command and benchmark, so the rule (and its
message when Mininet was asked for without root) is written once.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from innet.testbed.core.testbed import TestbedError, TestbedOptions
from innet.testbed.core.topology import Topology

if TYPE_CHECKING:
    from innet.testbed.core.testbed import Testbed

BACKENDS = ("auto", "mininet", "loopback")


def resolve_backend(requested: str = "auto") -> str:
    """``mininet`` or ``loopback``: ``auto`` is Mininet when running as root (network
    namespaces need it), loopback UDP otherwise."""
    if requested not in BACKENDS:
        raise TestbedError(f"backend {requested!r}: expected one of {', '.join(BACKENDS)}")
    if requested == "auto":
        return "mininet" if os.geteuid() == 0 else "loopback"
    return requested


def open_testbed(topology: Topology, options: TestbedOptions | None = None, backend: str = "auto") -> "Testbed":
    """An unstarted testbed of a single-switch ``topology`` on ``backend`` (use it as a
    context manager). Multi-switch topologies have their system's own testbed classes
    (``innet.testbed.rail``, ``innet.testbed.geo``), built on the same backends."""
    resolved = resolve_backend(backend)
    if resolved == "mininet":
        from innet.testbed.backends.mininet.net import MininetTestbed

        return MininetTestbed(topology, options)
    from innet.testbed.backends.loopback import LoopbackTestbed

    return LoopbackTestbed(topology, options)
