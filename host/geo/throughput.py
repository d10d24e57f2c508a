"""Passive throughput of one link direction, measured from the training messages themselves.

AdaTopK needs the rate a boundary delivers *now*, not the one probed at start (a WAN link's
share changes during a run). The receiver times every message: the sender stamps its
wall-clock send time in the tag, the receiver notes the arrival, and with the one-way delay
``d`` from the start-up probe it recovers how long the link spent serialising the message:
the link starts on message k when it is sent or when message k-1 left it (its arrival minus
``d``), whichever is later, so ``ser_k = a_k - d - max(s_k, a_{k-1} - d)``. The rate is the
bytes over the serialisation time of the last ``window`` messages (sums, not a mean of
ratios: a small message with a near-zero time does not dominate). The estimate goes back to
the sender in the tag of the next message the other way.

Sender and receiver must share a clock: true for processes on one machine and for Mininet
hosts (network namespaces of one kernel); across real sites it needs synchronised clocks.
"""

from __future__ import annotations

from collections import deque

MIN_SER_S = 20e-6
"""Floor of one message's serialisation time (timer and scheduler noise)."""
RECENT = 2
"""Samples that must agree before the meter treats the link as changed."""
CHANGE = 3.0
"""Factor between those samples' rate and the window's that counts as a change."""
WAITED_S = 0.5e-3
"""A receive that returns sooner than this found the message already waiting."""


class ThroughputMeter:
    """Receiver-side rate estimate of one link direction."""

    def __init__(self, delay_s: float = 0.0, window: int = 8) -> None:
        if window < 1:
            raise ValueError(f"throughput window={window!r}: must be >= 1")
        self.delay_s = max(0.0, delay_s)
        self.window = window
        self._samples: deque[tuple[int, float]] = deque(maxlen=window)
        self._last_arrival: float | None = None

    def observe(self, nbytes: int, sent_at: float, arrived_at: float, waited: bool = True) -> None:
        """One message of ``nbytes`` sent at ``sent_at`` and received at ``arrived_at`` (seconds).
        ``waited``: the receiver was already blocked on the link when it came. If not, the
        message sat in the buffer while the stage computed, its arrival time is unknown and
        it is not a sample (measured first without this: the time spent waiting for the
        receiver counted as serialisation and the 10 Mbit/s link read 0.7 Mbit/s)."""
        if not waited:
            self._last_arrival = None
            return
        start = sent_at if self._last_arrival is None else max(sent_at, self._last_arrival - self.delay_s)
        ser = max(MIN_SER_S, arrived_at - self.delay_s - start)
        self._samples.append((nbytes, ser))
        self._last_arrival = arrived_at
        self._forget_on_change()

    def _forget_on_change(self) -> None:
        """When the last ``RECENT`` samples agree on a rate ``CHANGE`` times above or below the
        rest of the window, the link changed: keep only them, so the estimate follows within a
        couple of messages instead of a whole window (measured: 7 steps to follow 0.2 -> 200
        Mbit/s with the window alone)."""
        if len(self._samples) <= RECENT:
            return
        samples = list(self._samples)
        old, new = samples[:-RECENT], samples[-RECENT:]
        before = sum(b for b, _ in old) / sum(s for _, s in old)
        rates = [b / s for b, s in new]
        if all(r > CHANGE * before for r in rates) or all(r * CHANGE < before for r in rates):
            self._samples = deque(new, maxlen=self.window)

    @property
    def rate_bps(self) -> float | None:
        """Bits per second over the window; None before the first message."""
        if not self._samples:
            return None
        return sum(b for b, _ in self._samples) * 8 / sum(s for _, s in self._samples)
