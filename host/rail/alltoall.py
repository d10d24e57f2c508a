"""MoE-style uniform all-to-all among the GPUs of an x-by-y rail grid (docs/rail.md).

Every GPU holds one ``D``-byte block for every other GPU and ends with one from each. Two routes:

* ``direct`` (rail-optimized): one exchange among all ``x*y`` GPUs; a peer of the same HB
  domain is reached over the HB fabric, any other over the NIC (rail switch, spine, rail switch);
* ``two-step`` (rail-only, the Rail-only paper's forwarding / NCCL's PXN): first inside the HB domain
  GPU ``g`` hands GPU ``r`` of its domain every block bound for rail ``r`` (``y`` blocks), then
  each GPU sends over its rail to GPU ``(d', r)`` every block its domain has for it (``x`` blocks).

Groups are :class:`innet.host.rail.hbdomain.HbGroup` full meshes (TCP); blocks are packed in a fixed
order so no block needs a header.
"""

from __future__ import annotations

import numpy as np

from innet.host.rail.hbdomain import HbGroup


def block(src: int, dst: int, size: int, salt: int = 0) -> bytes:
    """The block GPU ``src`` sends GPU ``dst`` (deterministic, so the receiver can check every byte)."""
    return np.random.default_rng([src, dst, size, salt]).integers(0, 256, size, dtype=np.uint8).tobytes()


class AllToAll:
    """The blocks of one GPU ``(d, g)`` in an x-by-y grid (global rank ``d*x + g``)."""

    def __init__(self, x: int, y: int, domain: int, gpu: int, size: int, salt: int = 0) -> None:
        self.x, self.y, self.d, self.g, self.size, self.salt = x, y, domain, gpu, size, salt
        self.rank = domain * x + gpu

    def _rank(self, d: int, g: int) -> int:
        return d * self.x + g

    def direct(self, everyone: HbGroup) -> dict[int, bytes]:
        """One exchange in a group of every GPU (member index = global rank); blocks by source."""
        out = {j: block(self.rank, j, self.size, self.salt) for j in range(self.x * self.y) if j != self.rank}
        got = everyone.exchange(out, "all-to-all")
        got[self.rank] = block(self.rank, self.rank, self.size, self.salt)
        return got

    def two_step(self, domain: HbGroup, rail: HbGroup) -> dict[int, bytes]:
        """HB step (``domain``: members by gpu index), then rail step (``rail``: members by domain
        index); blocks by source."""
        x, y, size = self.x, self.y, self.size
        # step 1: to GPU r of my domain, my blocks for (d', r), d' = 0..y-1
        out = {r: b"".join(block(self.rank, self._rank(dd, r), size, self.salt) for dd in range(y))
               for r in range(x) if r != self.g}
        got = domain.exchange(out, "all-to-all HB step")
        # held[(src gpu in my domain)][d'] = block from (d, src) to (d', g)
        held: dict[int, list[bytes]] = {self.g: [block(self.rank, self._rank(dd, self.g), size, self.salt)
                                                 for dd in range(y)]}
        for src, data in got.items():
            held[src] = [data[dd * size:(dd + 1) * size] for dd in range(y)]
        # step 2: to (d', g), the blocks of my whole domain for it
        out2 = {dd: b"".join(held[src][dd] for src in range(x)) for dd in range(y) if dd != self.d}
        got2 = rail.exchange(out2, "all-to-all rail step")
        result = {self._rank(self.d, src): held[src][self.d] for src in range(x)}
        for dd, data in got2.items():
            for src in range(x):
                result[self._rank(dd, src)] = data[src * size:(src + 1) * size]
        return result

    def check(self, received: dict[int, bytes]) -> bool:
        """Every source's block arrived, every byte as sent."""
        return sorted(received) == list(range(self.x * self.y)) and all(
            received[src] == block(src, self.rank, self.size, self.salt) for src in received)


def received_bytes(received: dict[int, bytes]) -> int:
    return sum(len(b) for b in received.values())


__all__ = ["AllToAll", "block", "received_bytes"]
