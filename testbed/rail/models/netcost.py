"""Switch and transceiver counts, cost and power of rail-optimized and rail-only networks.

Both networks are folded Clos (fat-tree) networks of radix-``k`` switches with full
bisection (docs/rail.md):

* ``t`` tiers connect at most ``k`` endpoints when ``t = 1`` and ``2(k/2)^t`` otherwise
  (every tier below the top uses half its ports down, the top tier all of them);
* ``n`` endpoints on ``t >= 2`` tiers take ``ceil(n/(k/2))`` switches per lower tier and
  ``ceil(n/k)`` at the top; one tier takes ``ceil(n/k)`` switches;
* every link carries a transceiver at each end; there are ``n`` links per tier boundary
  (``n`` GPU-to-leaf links and ``n`` per switch-to-switch boundary): ``2nt`` transceivers.

Rail-optimized: one Clos over all ``N`` GPU NICs (the rail switches are its leaves, the
spines above them). Rail-only: ``x`` Clos networks (one per rail) of ``N/x`` GPUs each; no
spine, and each rail needs fewer tiers. Cost and power are counts times the per-part
prices and watts given as inputs (:class:`Parts`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from innet.testbed.rail.models.railperf import ModelError


@dataclass(frozen=True)
class Parts:
    """Per-part price and peak power (inputs; :data:`SEED_PARTS` documents one set)."""

    switch_usd: float
    """Price of one radix-k switch."""
    switch_w: float
    """Peak power of one switch (watts), transceivers excluded."""
    transceiver_usd: float
    """Price of one transceiver (one end of a link)."""
    transceiver_w: float
    """Peak power of one transceiver (watts)."""

    def __post_init__(self) -> None:
        for name in ("switch_usd", "switch_w", "transceiver_usd", "transceiver_w"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ModelError(f"parts {name}={value!r}: must be a number >= 0")


SEED_PARTS = Parts(switch_usd=58_000, switch_w=1_080, transceiver_usd=260, transceiver_w=9.4)
"""A 64-port 400 Gbps switch (QM9700 class) and a 400 Gbps optical transceiver (OSFP SR4 class),
chosen so a rail-optimized network of 32768 GPUs costs ~$200M and draws ~4.6 MW, the seed's
figures for "30,000 GPUs" (docs/rail.md shows the arithmetic)."""


@dataclass(frozen=True)
class Cluster:
    """A GPU cluster to wire."""

    gpus: int
    """N: GPUs (one NIC each)."""
    gpus_per_domain: int
    """x: HB domain size, also the number of rails."""
    radix: int
    """k: ports per switch (even)."""

    def __post_init__(self) -> None:
        for name in ("gpus", "gpus_per_domain", "radix"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ModelError(f"cluster {name}={value!r}: must be an integer >= 1")
        if self.radix < 2 or self.radix % 2:
            raise ModelError(f"cluster radix={self.radix}: must be even and >= 2")
        if self.gpus % self.gpus_per_domain:
            raise ModelError(f"cluster gpus={self.gpus}: must be a multiple of gpus_per_domain="
                             f"{self.gpus_per_domain}")


@dataclass(frozen=True)
class Network:
    """Counts, cost and power of one network."""

    design: str
    tiers: int
    """Switch tiers (per rail for rail-only)."""
    switches: int
    transceivers: int
    cost_usd: float
    power_w: float


def tiers(endpoints: int, radix: int) -> int:
    """Fewest Clos tiers of radix-``radix`` switches that connect ``endpoints`` at full bisection."""
    if endpoints < 1:
        raise ModelError(f"endpoints={endpoints}: must be >= 1")
    t = 1
    while endpoints > (radix if t == 1 else 2 * (radix // 2) ** t):
        t += 1
    return t


def clos(endpoints: int, radix: int) -> tuple[int, int, int]:
    """(tiers, switches, transceivers) of a full-bisection Clos over ``endpoints``."""
    t = tiers(endpoints, radix)
    switches = math.ceil(endpoints / radix) if t == 1 else (
        (t - 1) * math.ceil(endpoints / (radix // 2)) + math.ceil(endpoints / radix))
    return t, switches, 2 * endpoints * t


def _network(design: str, t: int, switches: int, transceivers: int, parts: Parts) -> Network:
    return Network(design, t, switches, transceivers,
                   switches * parts.switch_usd + transceivers * parts.transceiver_usd,
                   switches * parts.switch_w + transceivers * parts.transceiver_w)


def rail_optimized(cluster: Cluster, parts: Parts) -> Network:
    """One Clos over every GPU NIC (rail switches as leaves, spines above)."""
    t, s, tr = clos(cluster.gpus, cluster.radix)
    return _network("rail-optimized", t, s, tr, parts)


def rail_only(cluster: Cluster, parts: Parts) -> Network:
    """One Clos per rail over that rail's ``N/x`` GPUs, no spine."""
    t, s, tr = clos(cluster.gpus // cluster.gpus_per_domain, cluster.radix)
    x = cluster.gpus_per_domain
    return _network("rail-only", t, x * s, x * tr, parts)


@dataclass(frozen=True)
class Comparison:
    """Both networks for one cluster and what rail-only saves."""

    cluster: Cluster
    rail_optimized: Network
    rail_only: Network

    @property
    def cost_saving(self) -> float:
        """Fraction of the rail-optimized cost that rail-only saves."""
        return 1 - self.rail_only.cost_usd / self.rail_optimized.cost_usd

    @property
    def power_saving(self) -> float:
        return 1 - self.rail_only.power_w / self.rail_optimized.power_w


def compare(cluster: Cluster, parts: Parts = SEED_PARTS) -> Comparison:
    return Comparison(cluster, rail_optimized(cluster, parts), rail_only(cluster, parts))


SEED_CLUSTERS = (
    Cluster(gpus=16384, gpus_per_domain=8, radix=64),
    Cluster(gpus=32768, gpus_per_domain=256, radix=64),
    Cluster(gpus=65536, gpus_per_domain=256, radix=64),
    Cluster(gpus=16384, gpus_per_domain=256, radix=64),
)
"""Clusters of DGX H100 (x=8) and DGX GH200 (x=256) platforms with 64-port switches whose
rail-optimized network needs three tiers: rails of 2048, 128 and 256 GPUs need two tiers,
rails of 64 one. (Our copy of the seed has Table II's caption, not its rows; docs/rail.md.)"""
