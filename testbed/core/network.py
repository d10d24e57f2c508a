"""What a :class:`~innet.testbed.core.testbed.Testbed` asks of the backend that brings its
topology up (``innet.testbed.backends``: loopback UDP, Mininet).

A testbed is one shape for every system: a topology value, a system class (star, rail, geo)
that says which jobs and runs it has, and a network object satisfying this protocol. The
system never subclasses a backend; a backend never knows which system it carries (a system
that needs more of the network, such as rail's HB bridges, hands the backend a topology
builder and a configure step). Fault injection is part of the protocol: a backend that
cannot emulate a fault raises :class:`~innet.testbed.core.testbed.TestbedError` naming
itself, so a system asks for the fault and never tests which backend it runs on.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from innet.host.agent.transport import TransportConfig
from innet.testbed.core.processes import ProcessGroup


@dataclass(frozen=True)
class SwitchProcess:
    """A running P4 switch as a backend started it: what the testbed's state file records."""

    pid: int | None
    """None when the backend does not know it (a switch not started here)."""
    log: str
    udp_ports: dict[str, str] = field(default_factory=dict)
    """Loopback: switch port -> the UDP HOST:PORT its socket is bound to."""
    interfaces: dict[str, str] = field(default_factory=dict)
    """Mininet: switch port -> interface name (``s1-eth1``)."""


class TestbedNetwork(Protocol):
    """A topology's switches and hosts, brought up on one backend."""

    kind: str
    """``mininet`` or ``loopback``."""
    thrift_port: int | None
    """BMv2 only: the single switch's Thrift port (registers through simple_switch_CLI)."""
    thrift_ports: dict[str, int]
    """BMv2 only: per P4 switch, its Thrift port (each simple_switch_grpc has its own)."""
    bmv2_tools: Any
    """BMv2 only: the binaries :meth:`prepare_pipeline` found."""
    planned_ports: dict[str, tuple[int, int | None]]
    """Per P4 switch, the (P4Runtime, Thrift) ports the testbed chose before :meth:`start`
    (``TestbedOptions.fixed_ports``; Thrift None: not BMv2); a switch not in it gets any free port."""

    def prepare_pipeline(self, procs: ProcessGroup) -> Any:
        """The pipeline to push when the switch is not innet-switch (compiled before any
        network exists, so that a missing binary leaves nothing to undo); None: innet.p4
        through innet's own compiler."""
        ...

    def start(self, procs: ProcessGroup) -> dict[str, str]:
        """Bring switches and hosts up, their processes recorded in ``procs``; per P4 switch,
        its P4Runtime address."""
        ...

    def stop(self) -> None:
        """Undo :meth:`start` (called also after a partial start)."""
        ...

    def spawn_on(self, host: str, name: str, argv: Sequence[str], env: dict[str, str] | None = None,
                 stdout_pipe: bool = False) -> subprocess.Popen[bytes]:
        """Start ``argv`` as a process of ``host`` (recorded in the run's ``procs``)."""
        ...

    def transport_to(self, host: str, switch: str) -> TransportConfig:
        """The agent transport of ``host`` towards P4 switch ``switch``, as a worker's plan
        carries it to the worker process (in the plan's JSON as its ``json_form``)."""
        ...

    def gloo_iface(self, host: str) -> str:
        """Interface gloo binds to on ``host``."""
        ...

    def gloo_master(self) -> str:
        """Address of rank 0 for gloo's rendezvous."""
        ...

    def count_iface(self, host: str) -> str | None:
        """Interface (in the host's namespace) whose counters are that host's link; None on loopback."""
        ...

    def wire_bytes(self) -> dict[str, tuple[int, int]] | None:
        """Per host, (bytes sent, bytes received) on its link so far; None where not measurable."""
        ...

    def switch_details(self) -> dict[str, SwitchProcess]:
        """Per P4 switch, its process and ports as its state file records them."""
        ...

    def switch_pid(self) -> int | None:
        """Process id of a single-switch topology's switch (RSS, CPU); None otherwise or not running."""
        ...

    def free_port(self) -> int:
        """A TCP port for gloo's rendezvous on rank 0's host."""
        ...

    def freeze_switch(self, switch: str) -> None:
        """Make P4 switch ``switch`` stop forwarding as a hung switch does, its state kept
        (:meth:`thaw_switch` undoes it); TestbedError where the backend cannot."""
        ...

    def thaw_switch(self, switch: str) -> None:
        """Let P4 switch ``switch`` forward again after :meth:`freeze_switch`."""
        ...

    def set_nic_link(self, host: str, up: bool) -> None:
        """Take ``host``'s link to its switch down (or up again) at the switch's end, as a
        pulled cable does; TestbedError where the backend has no links."""
        ...
