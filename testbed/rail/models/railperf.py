"""Completion times of all-to-all and allreduce on rail-only and rail-optimized networks.

The x-by-y grid of the Rail-only paper (docs/rail.md derives every formula): ``y`` HB
domains of ``x`` GPUs; each GPU has ``C_F`` bit/s into its HB domain (NVLink) and ``C_S``
bit/s on its NIC (its rail), ``C_S < C_F``. Bandwidth terms only (latency ignored, as in
the Rail-only paper: the transfers are large), every GPU sends and receives at the same time.

All-to-all, ``D`` bytes from every GPU to every other GPU:

* rail-optimized, direct: the ``x-1`` peers of the own domain over the HB domain and the
  ``x(y-1)`` GPUs of other domains over the NIC, both at once:
  ``T_ro = max((x-1)D/C_F, x(y-1)D/C_S)``;
* rail-only, two steps (PXN): first inside the HB domain every GPU hands GPU ``r`` of its
  domain everything bound for rail ``r`` (``yD`` per peer: ``y(x-1)D/C_F``), then every
  GPU sends over its rail what its domain has for each other domain (``xD`` per peer:
  ``x(y-1)D/C_S``); the second step needs the first's data:
  ``T_r = y(x-1)D/C_F + x(y-1)D/C_S``.

  The difference is ``y(x-1)D/C_F`` (the bandwidth tax of forwarding); when the NIC part
  dominates, the slowdown ``T_r/T_ro - 1 = y(x-1)C_S / (x(y-1)C_F)``, about ``C_S/C_F``
  when ``y(x-1) ≈ x(y-1)`` (the Rail-only paper's 8.2% for DGX A100, 11.2% for DGX H100).

Allreduce of an ``S``-byte vector on every GPU:

* hierarchical, ring on the rail (NCCL's): reduce-scatter and all-gather in the HB domain,
  ``2(x-1)S/(x C_F)``, plus a ring allreduce of the ``S/x`` shard over the rail's ``y``
  GPUs, ``2(y-1)S/(xy C_S)``;
* hierarchical INA (innet): the same HB phases plus one shard up and one down through
  the rail switch, overlapped (full duplex): ``S/(x C_S)``;
* flat INA through the spine (rail-optimized only): ``S/C_S``;
* flat ring over all ``xy`` GPUs on the NIC (gloo): ``2(xy-1)S/(xy C_S)``.

The hierarchical allreduces stay on each rail, so they cost the same on both networks.
"""

from __future__ import annotations

from dataclasses import dataclass


class ModelError(ValueError):
    """Bad model input; names the parameter, the constraint and the value."""


@dataclass(frozen=True)
class Grid:
    """A rail network's GPUs and link rates."""

    gpus_per_domain: int
    """x: GPUs per HB domain (and rails)."""
    domains: int
    """y: HB domains (GPUs per rail)."""
    c_s_bps: float
    """C_S: NIC bandwidth per GPU, bit/s each way."""
    c_f_bps: float
    """C_F: HB-domain bandwidth per GPU, bit/s each way."""

    def __post_init__(self) -> None:
        for name in ("gpus_per_domain", "domains"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ModelError(f"grid {name}={value!r}: must be an integer >= 1")
        for name in ("c_s_bps", "c_f_bps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ModelError(f"grid {name}={value!r}: must be a number > 0 (bit/s)")

    @property
    def x(self) -> int:
        return self.gpus_per_domain

    @property
    def y(self) -> int:
        return self.domains


def _bytes(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ModelError(f"{what}={value!r}: must be a number of bytes >= 0")
    return float(value) * 8


def alltoall_rail_optimized(grid: Grid, pair_bytes: float) -> float:
    """Seconds of a uniform all-to-all (``pair_bytes`` per ordered GPU pair), direct routes."""
    d = _bytes(pair_bytes, "pair_bytes")
    x, y = grid.x, grid.y
    return max((x - 1) * d / grid.c_f_bps, x * (y - 1) * d / grid.c_s_bps)


def alltoall_rail_only(grid: Grid, pair_bytes: float) -> float:
    """Seconds of a uniform all-to-all with the two-step route (HB forwarding, then the rail)."""
    d = _bytes(pair_bytes, "pair_bytes")
    x, y = grid.x, grid.y
    return y * (x - 1) * d / grid.c_f_bps + x * (y - 1) * d / grid.c_s_bps


def alltoall_slowdown(grid: Grid) -> float:
    """``T_rail_only / T_rail_optimized - 1`` (independent of the message size)."""
    ro = alltoall_rail_optimized(grid, 1.0)
    return alltoall_rail_only(grid, 1.0) / ro - 1 if ro > 0 else 0.0


def seed_slowdown_estimate(grid: Grid) -> float:
    """The Rail-only paper's approximation of the slowdown: ``C_S / C_F``."""
    return grid.c_s_bps / grid.c_f_bps


def _hb_phases(grid: Grid, s: float) -> float:
    return 2 * (grid.x - 1) * s / (grid.x * grid.c_f_bps)


def allreduce_hierarchical_ring(grid: Grid, message_bytes: float) -> float:
    """Seconds of HB reduce-scatter, ring allreduce of each shard on its rail, HB all-gather."""
    s = _bytes(message_bytes, "message_bytes")
    x, y = grid.x, grid.y
    return _hb_phases(grid, s) + 2 * (y - 1) * s / (x * y * grid.c_s_bps)


def allreduce_hierarchical_ina(grid: Grid, message_bytes: float) -> float:
    """Seconds of HB reduce-scatter, INA of each shard on its rail switch, HB all-gather."""
    s = _bytes(message_bytes, "message_bytes")
    return _hb_phases(grid, s) + (s / (grid.x * grid.c_s_bps) if grid.y > 1 else 0.0)


def allreduce_flat_ina(grid: Grid, message_bytes: float) -> float:
    """Seconds of INA of the whole vector through one (spine) switch over the NIC."""
    return _bytes(message_bytes, "message_bytes") / grid.c_s_bps


def allreduce_flat_ring(grid: Grid, message_bytes: float) -> float:
    """Seconds of a ring allreduce over all ``xy`` GPUs paced by hops at C_S (on rail-only the
    ring's hops inside a domain run at C_F, but its domain-to-domain hops still set the pace)."""
    n = grid.x * grid.y
    return 2 * (n - 1) * _bytes(message_bytes, "message_bytes") / (n * grid.c_s_bps)


SEED_PLATFORMS = {
    "dgx-a100": Grid(gpus_per_domain=8, domains=8, c_s_bps=200e9, c_f_bps=2.4e12),
    "dgx-h100": Grid(gpus_per_domain=8, domains=8, c_s_bps=400e9, c_f_bps=3.6e12),
}
"""The Rail-only paper's platforms: DGX A100 (NVLink 2.4 Tbps, 200 Gbps NIC per GPU) and DGX H100 (3.6 Tbps,
400 Gbps); y = x = 8, where ``y(x-1) = x(y-1)``."""


def alltoall_table(grid: Grid, pair_bytes: float) -> dict[str, float]:
    """Every all-to-all figure of one grid (seconds, and the slowdowns as fractions)."""
    return {"rail_optimized_s": alltoall_rail_optimized(grid, pair_bytes),
            "rail_only_s": alltoall_rail_only(grid, pair_bytes),
            "slowdown": alltoall_slowdown(grid), "seed_estimate": seed_slowdown_estimate(grid)}


def allreduce_table(grid: Grid, message_bytes: float) -> dict[str, float]:
    """Every allreduce figure of one grid (seconds)."""
    return {"hierarchical_ina_s": allreduce_hierarchical_ina(grid, message_bytes),
            "hierarchical_ring_s": allreduce_hierarchical_ring(grid, message_bytes),
            "flat_ina_s": allreduce_flat_ina(grid, message_bytes),
            "flat_ring_s": allreduce_flat_ring(grid, message_bytes)}
