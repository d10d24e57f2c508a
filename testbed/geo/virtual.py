"""Pipeline stages and shaped links in virtual time, for AdaTopK runs that do not depend on load.

AdaTopK's ratio follows what the receiver's meter measures and the compute time the message
hides behind; timed with real clocks both move with the machine's load (a test timed by real
sleeps failed 1 run in 6 on a loaded 2-core machine). Here every stage has its own clock, a
modelled compute time advances it, and each link end stamps a message with the time it leaves
the link (rate and delay applied to the sender's clock, in order); the receiver's clock moves to
that time. Every rate, ratio and byte count then follows from the link model alone, and a run
gives the same numbers on any machine (``tests/integration/geo/test_geo_adatopk_adapts.py``,
``python -m innet.testbed.geo.seeds``).
"""

from __future__ import annotations

import struct
from typing import Mapping

from innet.host.geo.channel import Channel, LinkShape
from innet.host.geo.graph import Graph, ParamStore
from innet.host.geo.ops import Array
from innet.host.geo.stages import Stage, StagePlan

_DUE = struct.Struct(">d")


class VirtualClock:
    """One stage's time in seconds; only the stage's own compute and its links move it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class VirtualLink(Channel):
    """One end of a shaped link in virtual time: a message occupies the link for ``bytes * 8 /
    rate`` after the previous one from this end and arrives ``delay`` after it leaves (as
    ``ShapedChannel`` emulates in real time); receiving moves the receiver's clock to the
    arrival if that is later. ``shape`` may be replaced between messages (a rate change)."""

    def __init__(self, inner: Channel, clock: VirtualClock, shape: LinkShape) -> None:
        super().__init__()
        self.inner, self.clock, self.shape, self.name = inner, clock, shape, inner.name
        self._busy_until = 0.0

    def _send(self, data: bytes) -> None:
        tx = self.shape.transfer_s(len(data)) - self.shape.delay_ms / 1e3
        self._busy_until = max(self.clock.now, self._busy_until) + tx
        self.inner.send(_DUE.pack(self._busy_until + self.shape.delay_ms / 1e3) + data)

    def _recv(self, timeout: float | None) -> bytes:
        raw = self.inner.recv(timeout)
        (due,) = _DUE.unpack_from(raw)
        self.clock.now = max(self.clock.now, due)
        return raw[_DUE.size:]

    def close(self) -> None:
        self.inner.close()


class TimedStage(Stage):
    """A stage whose forward and backward of one microbatch each take ``compute_s`` of its
    virtual clock (the arithmetic is the plain stage's)."""

    def __init__(self, graph: Graph, plan: StagePlan, params: ParamStore, clock: VirtualClock,
                 compute_s: float) -> None:
        if not compute_s >= 0:
            raise ValueError(f"timed stage compute_s={compute_s!r}: must be >= 0")
        super().__init__(graph, plan, params)
        self.clock, self.compute_s = clock, compute_s

    def forward(self, mb: int, received: Mapping[str, Array], feeds: Mapping[str, Array]) -> dict[str, Array]:
        out = super().forward(mb, received, feeds)
        self.clock.now += self.compute_s
        return out

    def backward(self, mb: int, grads_out: Mapping[str, Array], loss_scale: float = 1.0) -> dict[str, Array]:
        out = super().backward(mb, grads_out, loss_scale)
        self.clock.now += self.compute_s
        return out


__all__ = ["TimedStage", "VirtualClock", "VirtualLink"]
