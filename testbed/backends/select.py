"""The one place that decides where a topology comes up: Mininet as root, loopback otherwise.

``backend="auto"`` resolves here for every command and benchmark, so the rule (and its
message when Mininet was asked for without root) is written once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from innet.testbed.core.network import TestbedNetwork
from innet.testbed.core.testbed import Testbed, TestbedError, TestbedOptions
from innet.testbed.core.topology import Topology

if TYPE_CHECKING:
    from innet.testbed.backends.mininet.net import Configure, TopoBuilder

BACKENDS = ("auto", "mininet", "loopback")


def resolve_backend(requested: str = "auto") -> str:
    """``mininet`` or ``loopback``: ``auto`` is Mininet when running as root (network
    namespaces need it), loopback UDP otherwise."""
    if requested not in BACKENDS:
        raise TestbedError(f"backend {requested!r}: expected one of {', '.join(BACKENDS)}")
    if requested == "auto":
        return "mininet" if os.geteuid() == 0 else "loopback"
    return requested


@dataclass(frozen=True)
class MininetParts:
    """What a system adds to the Mininet backend (composition, not a subclass): see
    :class:`~innet.testbed.backends.mininet.net.MininetNetwork`."""

    topo: TopoBuilder | None = None
    """Its ``mininet.topo.Topo`` builder; None: a star with the topology's link shaping."""
    configure: Configure | None = None
    """Its steps once Mininet is up."""
    executor: bool = True
    """Whether the switches get ``options.switch_executor`` (else innet-switch's default)."""


def network_for(topology: Topology, options: TestbedOptions, backend: str = "auto",
                mininet: MininetParts = MininetParts()) -> TestbedNetwork:
    """The network of ``topology`` on ``backend`` (``mininet``: what the system adds when
    that is Mininet; loopback needs nothing)."""
    if resolve_backend(backend) == "mininet":
        from innet.testbed.backends.mininet.net import MininetNetwork

        return MininetNetwork(topology, options, mininet.topo, mininet.configure, mininet.executor)
    from innet.testbed.backends.loopback import LoopbackNetwork

    return LoopbackNetwork(topology, options)


def open_testbed(topology: Topology, options: TestbedOptions | None = None, backend: str = "auto") -> Testbed:
    """An unstarted testbed of a single-switch ``topology`` on ``backend`` (use it as a
    context manager). Multi-switch topologies have their system's testbed class
    (``innet.testbed.rail``, ``innet.testbed.geo``), built on the same networks."""
    options = options or TestbedOptions()
    return Testbed(topology, options, network_for(topology, options, backend))
