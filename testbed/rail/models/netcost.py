"""Switch and transceiver counts, cost and power of rail-optimized and rail-only networks.

Why: the Rail-only paper's Table II claims 38-77% lower network cost ($117M-$234M) and
37-75% lower power (1.7-6.9 MW). Both networks are built as the paper describes them
(section IV-A): full-bisection folded Clos (fat-tree) networks of radix-``k`` switches.

* rail-optimized: one Clos over all ``N`` GPU NICs; the rail switches are its leaves and
  the spine tiers above join the rails;
* rail-only: the spine is removed and its uplinks become downlinks, so every rail (the
  ``N/K`` GPUs of one local rank) is its own, smaller Clos: ``K`` Clos networks of ``N/K``.

A Clos of ``t`` tiers connects ``k`` endpoints (``t = 1``) or ``2(k/2)^t``; ``n`` endpoints
on ``t >= 2`` tiers take ``ceil(n/(k/2))`` switches in each lower tier and ``ceil(n/k)`` at the
top. Every tier boundary carries ``n`` links (GPU-leaf, leaf-spine, ...), each with a
transceiver at both ends: ``2n`` per tier.

Cost = switches x switch price + transceivers x transceiver price; power likewise. The
parts (:data:`PUBLIC_PARTS`) come from public price lists and datasheets (docs/rail.md
cites them); a radix-``k`` switch is priced and powered per port from the 64-port one. No
input is chosen to reach the paper's totals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from innet.testbed.rail.models.railperf import ModelError


@dataclass(frozen=True)
class Parts:
    """Per-part prices and power (inputs)."""

    switch_usd_per_port: float
    """Price of a switch divided by its ports (400 Gbit/s each)."""
    switch_w_per_port: float
    """Power of a switch divided by its ports, optics excluded."""
    transceiver_usd: float
    """Price of one 400 Gbit/s transceiver (one end of a link), its share of fiber included."""
    transceiver_w: float
    """Power of one transceiver."""
    switch_power_includes_optics: bool = False
    """True when ``switch_w_per_port`` is a maximum that already includes the transceivers
    plugged into the switch (NVIDIA's "maximum power with active cables"): then only the
    NIC-end transceivers, one per GPU, add ``transceiver_w``."""

    def __post_init__(self) -> None:
        for name in ("switch_usd_per_port", "switch_w_per_port", "transceiver_usd", "transceiver_w"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ModelError(f"parts {name}={value!r}: must be a number >= 0")

    def switch_usd(self, radix: int) -> float:
        return radix * self.switch_usd_per_port

    def switch_w(self, radix: int) -> float:
        return radix * self.switch_w_per_port


PUBLIC_PARTS = Parts(switch_usd_per_port=36_000 / 64, switch_w_per_port=747 / 64,
                     transceiver_usd=640, transceiver_w=9)
"""A 64-port 400G NDR switch (QM9700 class): $36,000 (FS.com's model; NVIDIA's own about
$50,000), 747 W typical without optics (NVIDIA QM9700 spec); a 400G transceiver end $640
(a public H100-cluster cost sheet, Aug. 2024: $1,280 of optics and fiber per 400G link) and
9 W (NVIDIA MMA4Z00-NS400 datasheet, maximum). Sources: docs/rail.md."""

QM9700_MAX_W = 1720.0
"""NVIDIA QM9700/QM9790 user manual (the paper's ref. [31]), specifications: maximum power
with active cables (its 32 twin-port OSFP cages loaded), against 747 W typical with passive
cables."""
PEAK_PARTS = Parts(switch_usd_per_port=PUBLIC_PARTS.switch_usd_per_port, switch_w_per_port=QM9700_MAX_W / 64,
                   transceiver_usd=PUBLIC_PARTS.transceiver_usd, transceiver_w=PUBLIC_PARTS.transceiver_w,
                   switch_power_includes_optics=True)
"""The same prices; peak power: every switch at the QM9700's maximum (optics included) plus a
9 W transceiver at each GPU's NIC. The paper quotes "peak power" (section I)."""


@dataclass(frozen=True)
class Cluster:
    """A GPU cluster to wire."""

    gpus: int
    """N: GPUs (one NIC each)."""
    gpus_per_domain: int
    """K: HB domain size, also the number of rails."""
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
    switches_per_tier: tuple[int, ...]
    """Switches in each tier, leaves first (all rails together for rail-only)."""
    transceivers: int
    cost_usd: float
    power_w: float

    @property
    def switches(self) -> int:
        return sum(self.switches_per_tier)


def tiers(endpoints: int, radix: int) -> int:
    """Fewest Clos tiers of radix-``radix`` switches that connect ``endpoints`` at full bisection."""
    if endpoints < 1:
        raise ModelError(f"endpoints={endpoints}: must be >= 1")
    if radix < 2 or radix % 2:
        raise ModelError(f"radix={radix}: must be even and >= 2")
    t = 1
    while endpoints > (radix if t == 1 else 2 * (radix // 2) ** t):
        t += 1
    return t


def clos_tiers(endpoints: int, radix: int) -> tuple[int, ...]:
    """Switches per tier (leaves first) of a full-bisection Clos over ``endpoints``."""
    t = tiers(endpoints, radix)
    if t == 1:
        return (math.ceil(endpoints / radix),)
    return (math.ceil(endpoints / (radix // 2)),) * (t - 1) + (math.ceil(endpoints / radix),)


def clos(endpoints: int, radix: int) -> tuple[int, int, int]:
    """(tiers, switches, transceivers) of a full-bisection Clos over ``endpoints``."""
    per_tier = clos_tiers(endpoints, radix)
    return len(per_tier), sum(per_tier), 2 * endpoints * len(per_tier)


def _network(design: str, per_tier: tuple[int, ...], transceivers: int, radix: int, parts: Parts,
             nic_ends: int) -> Network:
    switches = sum(per_tier)
    powered = nic_ends if parts.switch_power_includes_optics else transceivers
    return Network(design, len(per_tier), per_tier, transceivers,
                   switches * parts.switch_usd(radix) + transceivers * parts.transceiver_usd,
                   switches * parts.switch_w(radix) + powered * parts.transceiver_w)


def rail_optimized(cluster: Cluster, parts: Parts = PUBLIC_PARTS) -> Network:
    """One Clos over every GPU NIC (rail switches as leaves, spines above)."""
    per_tier = clos_tiers(cluster.gpus, cluster.radix)
    return _network("rail-optimized", per_tier, 2 * cluster.gpus * len(per_tier), cluster.radix, parts, cluster.gpus)


def rail_only(cluster: Cluster, parts: Parts = PUBLIC_PARTS) -> Network:
    """One Clos per rail over that rail's ``N/K`` GPUs, no spine."""
    rail = cluster.gpus // cluster.gpus_per_domain
    per_rail = clos_tiers(rail, cluster.radix)
    per_tier = tuple(cluster.gpus_per_domain * s for s in per_rail)
    return _network("rail-only", per_tier, 2 * cluster.gpus * len(per_rail), cluster.radix, parts, cluster.gpus)


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

    @property
    def cost_saving_usd(self) -> float:
        return self.rail_optimized.cost_usd - self.rail_only.cost_usd

    @property
    def power_saving_w(self) -> float:
        return self.rail_optimized.power_w - self.rail_only.power_w


def compare(cluster: Cluster, parts: Parts = PUBLIC_PARTS) -> Comparison:
    return Comparison(cluster, rail_optimized(cluster, parts), rail_only(cluster, parts))


TABLE2_GPUS = (16384, 32768, 65536)
"""The cluster sizes of the paper's evaluation (section V-B: 16,384 to 65,536 H100s)."""
TABLE2_RADIX = (32, 64, 128)
TABLE2_DOMAINS = (8, 256)
"""DGX H100 (K = 8) and DGX GH200 (K = 256), the platforms the paper evaluates."""
TABLE2_CLUSTERS = tuple(Cluster(n, k_hb, k) for k_hb in TABLE2_DOMAINS for n in TABLE2_GPUS for k in TABLE2_RADIX)
"""Our copy of the paper has Table II's caption, not its rows: every combination of the
sizes, radices and platforms it names."""

PAPER_TABLE2 = {"cost_saving": (0.38, 0.77), "power_saving": (0.37, 0.75),
                "cost_saving_usd": (117e6, 234e6), "power_saving_w": (1.7e6, 6.9e6)}
"""The ranges the paper states for Table II (abstract and section V-E)."""


def sweep(gpus: tuple[int, ...], radices: tuple[int, ...], domains: tuple[int, ...],
          parts: Parts = PUBLIC_PARTS) -> list[Comparison]:
    """Every (N, radix, K) combination where K divides N."""
    return [compare(Cluster(n, k_hb, k), parts) for k_hb in domains for k in radices for n in gpus if n % k_hb == 0]
