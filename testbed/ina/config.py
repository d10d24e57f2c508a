"""The settings of ``innet bench`` (the allreduce grid) and ``innet bench soak``, checked when made.

Both are frozen: a run, its records and its saved document all see the one value they were
started with, and ``settings_json``/``to_json`` give the form the documents save.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from innet.wire import IP_OVERHEAD, SUPPORTED_K, k_for_mtu, message_len
from innet.testbed.backends.select import resolve_backend


@dataclass(frozen=True)
class BenchConfig:
    """The grid and the settings of one benchmark run."""

    workers: tuple[int, ...] = (2, 4)
    """Worker counts N (2..8), one testbed each."""
    sizes: tuple[int, ...] = (1024, 16384, 262144)
    """Elements S per allreduce (float32)."""
    losses: tuple[float, ...] = (0.0,)
    """Random loss per link direction in percent (a cls_bpf random drop in Mininet: the kernel has no
    netem; switch output on loopback)."""
    bw_mbps: float | None = 1000.0
    """Link rate (Mininet TCLink); None for unshaped veths."""
    delay_ms: float | None = None
    """One-way link delay in ms (Mininet)."""
    repeats: int = 2
    """Timed operations per size and collective (after one warm-up)."""
    k: int | None = None
    """Values per packet (``INNET_K``, one of ``wire.SUPPORTED_K``); None: the largest whose
    frame fits the MTU (256 at 1500, 2048 at 9000)."""
    mtu: int | None = None
    """Link MTU (Mininet: every host and switch interface, for innet and gloo alike); None:
    the interfaces' default, 1500."""
    window: int = 16
    """Slots per job (outstanding chunks per worker)."""
    collectives: tuple[str, ...] = ("ina", "gloo")
    """What to run: ``ina`` (innet) and/or ``gloo``."""
    backend: str = "auto"
    """``mininet``, ``loopback`` or ``auto`` (Mininet when root)."""
    executor: str = "auto"
    """The switch's packet executor (``innet-switch --executor``): native, python or auto."""
    switch_impls: tuple[str, ...] = ("innet",)
    """The switches, each measured on its own testbed in this run, rows labelled by it:
    ``innet`` and/or ``bmv2`` (simple_switch_grpc, Mininet only; ``TestbedOptions.switch_impl``)."""
    out_dir: Path = Path("results")
    """Where JSON and PNG go."""
    timeout_s: float = 300.0
    """Seconds one collective may take for all sizes; beyond, it is recorded as a failure."""

    def __post_init__(self) -> None:
        for n in self.workers:
            if not 2 <= n <= 8:
                raise ValueError(f"bench workers={n}: must be within 2..8")
        for s in self.sizes:
            if not 1 <= s <= 1 << 24:
                raise ValueError(f"bench size={s}: must be within 1..16M elements")
        for p in self.losses:
            if not 0 <= p < 100:
                raise ValueError(f"bench loss={p}: must be a percentage within 0..100")
        unknown = set(self.collectives) - {"ina", "gloo"}
        if unknown or not self.collectives:
            raise ValueError(f"bench collectives={self.collectives}: choose from ina, gloo")
        if self.backend not in ("auto", "mininet", "loopback"):
            raise ValueError(f"bench backend={self.backend!r}: choose auto, mininet or loopback")
        if not self.switch_impls or set(self.switch_impls) - {"innet", "bmv2"} \
                or len(set(self.switch_impls)) != len(self.switch_impls):
            raise ValueError(f"bench switch_impls={self.switch_impls}: one or more of innet, bmv2, each once")
        if self.repeats < 1:
            raise ValueError(f"bench repeats={self.repeats}: must be >= 1")
        if self.mtu is not None and not 576 <= self.mtu <= 9000:
            raise ValueError(f"bench mtu={self.mtu}: must be within 576..9000")
        if self.k is not None:
            if self.k not in SUPPORTED_K:
                raise ValueError(f"bench k={self.k}: innet.p4 builds K in {', '.join(map(str, SUPPORTED_K))}")
            if IP_OVERHEAD + message_len(self.k) > self.link_mtu:
                raise ValueError(f"bench k={self.k}: a {IP_OVERHEAD + message_len(self.k)}-byte innet "
                                 f"packet exceeds mtu {self.link_mtu} (largest K that fits: "
                                 f"{k_for_mtu(self.link_mtu)})")

    @property
    def link_mtu(self) -> int:
        """The MTU the links have (1500 unless set)."""
        return self.mtu if self.mtu is not None else 1500

    def resolved_k(self) -> int:
        """K as given, else the largest supported K whose frame fits the MTU."""
        return self.k if self.k is not None else k_for_mtu(self.link_mtu)

    def resolved_backend(self) -> str:
        return resolve_backend(self.backend)

    def settings_json(self) -> dict[str, Any]:
        """The documents' ``settings``: every field (paths as text), K and MTU resolved."""
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}
        settings["k"], settings["mtu"] = self.resolved_k(), self.link_mtu
        return settings


@dataclass(frozen=True)
class SoakConfig:
    """What to run for how long."""

    minutes: float = 10.0
    workers: int = 4
    loss_pct: float = 5.0
    dup_pct: float = 5.0
    sizes: tuple[int, ...] = (1000, 20000)
    """Elements per allreduce in each round."""
    restart_every: int = 5
    """Every n-th round kills a worker mid-operation and restarts the set (0: never)."""
    loopback: bool = False
    chunk_deadline: float = 20.0
    out: Path = Path("results")

    def __post_init__(self) -> None:
        if not self.minutes > 0:
            raise ValueError(f"soak: --minutes {self.minutes} must be positive")
        if not 2 <= self.workers <= 32:
            raise ValueError(f"soak: --workers {self.workers} must be within 2..32")
        for name, pct in (("--loss", self.loss_pct), ("--dup", self.dup_pct)):
            if not 0 <= pct < 100:
                raise ValueError(f"soak: {name} {pct} must be within 0..100 (100 excluded)")
        if self.restart_every < 0:
            raise ValueError(f"soak: --restart-every {self.restart_every} must be >= 0")
        if not self.sizes or min(self.sizes) < 1:
            raise ValueError(f"soak: --sizes {list(self.sizes)} must be positive integers")

    def to_json(self) -> dict[str, Any]:
        """The saved document's ``config``: every field, the output folder as text."""
        return {**asdict(self), "out": str(self.out)}
