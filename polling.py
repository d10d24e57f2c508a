"""One way to wait for something to become ready: poll a condition under a deadline.

Readiness waits (a switch printing its address, a status file reaching a step, interface names
freed) all had their own ``deadline = time.monotonic() + ...`` loop with its own timeout
message. Here the loop is written once; a condition that sees a failure it cannot wait out
(the process it waits for exited) raises its own error, which passes through.
Root-level so host and testbed code can both use it.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


class PollTimeout(TimeoutError):
    """``what`` did not become ready within ``timeout`` seconds."""

    def __init__(self, what: str, timeout: float) -> None:
        super().__init__(f"{what}: not ready within {timeout:g} s")
        self.what = what
        self.timeout = timeout


def poll_until(condition: Callable[[], T | None], timeout: float, interval: float = 0.05,
               what: str = "condition") -> T:
    """Call ``condition`` every ``interval`` seconds until it returns a truthy value, and return
    that value; :class:`PollTimeout` once ``timeout`` seconds have passed. The condition is
    called at least once, and last after the deadline, so a thing that became ready during the
    final sleep is not reported as a timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise PollTimeout(what, timeout)
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
