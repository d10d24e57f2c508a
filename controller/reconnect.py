"""When a switch's connection is lost: how long and how often the controller tries again.

A restarted ``innet-switch`` (or ``simple_switch_grpc``) comes back on the same address
with no clients, often with no pipeline. The client (``P4RuntimeClient.recover``) opens a
new channel with exponential back-off until ``deadline``, arbitrates again with the same
election id, and then lets the layer above restore what it had installed (the pipeline,
forwarding, jobs: ``Switch`` and ``InnetSwitch`` remember them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class ReconnectPolicy:
    """Exponential back-off with a deadline."""

    deadline: float = 30.0
    """Seconds to keep trying after the connection was found lost; 0 disables
    reconnecting (the failed call raises SwitchUnreachableError at once)."""
    initial_delay: float = 0.05
    """Seconds before the second attempt (the first is immediate)."""
    max_delay: float = 2.0
    """Upper bound of the delay between attempts."""
    multiplier: float = 2.0
    """Growth of the delay per failed attempt."""

    @property
    def enabled(self) -> bool:
        return self.deadline > 0

    def delays(self) -> Iterator[float]:
        """The waits between attempts: initial_delay, times multiplier each, capped."""
        delay = self.initial_delay
        while True:
            yield delay
            delay = min(self.max_delay, delay * self.multiplier)


NO_RECONNECT = ReconnectPolicy(deadline=0)
"""Fail at once when the connection is lost (the behaviour before reconnecting existed)."""
