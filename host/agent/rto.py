"""Retransmission timeout of the host agents: RFC 6298 (Jacobson/Karels) with Karn's rule.

``RtoEstimator`` keeps the smoothed round-trip time of the agent's chunks (from the first
transmission of a chunk to its RESULT, which includes the switch's queue and waiting for
the other workers of the slot) and the timeout a newly sent chunk starts with:

- ``sample(rtt)``: ``SRTT``/``RTTVAR`` as in RFC 6298 2.2-2.3 (first sample: SRTT = R,
  RTTVAR = R/2; then RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|, SRTT = 7/8 SRTT + 1/8 R).
  Callers pass only samples of chunks sent once (Karn's rule: the RESULT of a
  retransmitted chunk cannot tell which transmission it answers).
- ``base``: ``SRTT + max(granularity, 4 RTTVAR)`` clamped to ``[min_rto, max_rto]``
  (``initial_rto`` before the first sample).
- Back-off as TCP does it (RFC 6298 5.5 and Karn's algorithm): a timer expiry that is
  evidence of loss doubles the timeout of *new* chunks (``timed_out``; at most once per
  timeout interval, so the expiry of a whole window counts once), and the next valid
  sample resets it (``sample``), so loss never escalates the timeout beyond the chunk
  that suffered it. ``undo`` takes a doubling back when the switch later shows the expiry
  was not a loss (a STATUS: the contribution arrived, the slot waits for other workers).

Each chunk additionally doubles its own timeout per retransmission (in
``innet.host.agent.aggregator``); that back-off ends with the chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_BACKOFF = 16
"""Largest back-off exponent (the timeout is capped at ``max_rto`` long before)."""


@dataclass(frozen=True)
class RtoBounds:
    """The constants of the estimator (seconds)."""

    initial_rto: float = 0.05
    """Timeout before the first RTT sample (not raised to ``min_rto``)."""
    min_rto: float = 0.02
    """Lower bound of the timeout."""
    max_rto: float = 1.0
    """Upper bound of the timeout (after back-off)."""
    granularity: float = 0.001
    """Clock granularity G of RFC 6298: the least variance term."""

    def __post_init__(self) -> None:
        if not 0 < self.min_rto <= self.max_rto:
            raise ValueError(f"RTO bounds: min_rto {self.min_rto} must be within 0 < min_rto <= "
                             f"max_rto ({self.max_rto})")
        if not 0 < self.initial_rto <= self.max_rto:
            raise ValueError(f"RTO bounds: initial_rto {self.initial_rto} is outside "
                             f"(0, max_rto {self.max_rto}]")
        if self.granularity < 0:
            raise ValueError(f"RTO bounds: granularity {self.granularity} is negative")


@dataclass
class RtoEstimator:
    """SRTT, RTTVAR and the shared back-off of one agent (see module docstring)."""

    bounds: RtoBounds = RtoBounds()
    srtt: float | None = None
    """Smoothed RTT; None before the first sample."""
    rttvar: float = 0.0
    """RTT variation."""
    backoff: int = 0
    """Doublings of the timeout since the last valid sample."""
    samples: int = 0
    """Valid samples taken."""
    _last_backoff: float = float("-inf")

    def sample(self, rtt: float) -> None:
        """A valid RTT sample (chunk sent once); resets the back-off."""
        rtt = max(rtt, 0.0)
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self.samples += 1
        self.backoff = 0
        self._last_backoff = float("-inf")

    @property
    def base(self) -> float:
        """The timeout from the estimate alone, clamped."""
        b = self.bounds
        if self.srtt is None:
            return b.initial_rto
        return min(max(self.srtt + max(b.granularity, 4 * self.rttvar), b.min_rto), b.max_rto)

    @property
    def rto(self) -> float:
        """The timeout a newly sent chunk starts with (base doubled per back-off, capped)."""
        return min(self.base * (1 << self.backoff), self.bounds.max_rto)

    def timed_out(self, now: float) -> bool:
        """A timer expiry that is evidence of loss: double the timeout, at most once per
        timeout interval. True if it doubled."""
        if self.backoff >= MAX_BACKOFF or now - self._last_backoff < self.rto:
            return False
        self.backoff += 1
        self._last_backoff = now
        return True

    def undo(self) -> None:
        """Take back one doubling (the expiry that caused it turned out not to be a loss)."""
        if self.backoff > 0:
            self.backoff -= 1
