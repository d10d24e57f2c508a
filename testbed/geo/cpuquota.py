"""CPU quotas per site: heterogeneous (and slowing) devices emulated with cgroups (root).

Each site gets its own cgroup under ``innet-geo-<pid>`` and every process of that site (its
speed probe, its stage processes; on Mininet the processes on the site's hosts, which are
ordinary processes in their own network namespaces) is moved into it. The quota is a share of
one CPU: ``share`` 0.25 lets the site's processes run 25 ms of every 100 ms period, whatever
else the machine does. Both cgroup layouts are handled:

- **v2** (``/sys/fs/cgroup`` is cgroup2 with the ``cpu`` controller): ``cpu.max`` = ``QUOTA PERIOD``;
- **v1 / hybrid** (the ``cpu`` controller mounted at ``/sys/fs/cgroup/cpu``, as on this machine,
  where the cgroup2 mount at ``/sys/fs/cgroup/unified`` has no controllers):
  ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``, the same CFS bandwidth limit.

The period is 10 ms (not the default 100 ms) so a stage's per-microbatch compute, a few ms, is
throttled in proportion rather than in 100 ms stalls. :meth:`close` moves any process still
inside back to the parent and removes every directory it made; callers use it in ``finally``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

PERIOD_US = 10_000
MIN_QUOTA_US = 1_000
"""The kernel's floor for a CFS quota (1 ms)."""


class CpuQuotaError(RuntimeError):
    """Quotas cannot be applied here (not root, no writable cpu cgroup); names what is missing."""


MAX_PERIOD_US = 1_000_000


def quota_for(share: float | None) -> tuple[int, int]:
    """(quota us, period us) for ``share`` of one CPU: a 10 ms period, longer only where the
    quota would fall below the kernel's 1 ms floor (share 0.05: 1 ms of every 20 ms)."""
    if share is None:
        return -1, PERIOD_US
    if not MIN_QUOTA_US / MAX_PERIOD_US <= share:
        raise CpuQuotaError(f"CPU share {share!r}: at least {MIN_QUOTA_US / MAX_PERIOD_US:g} of a CPU")
    period = PERIOD_US if share * PERIOD_US >= MIN_QUOTA_US else min(MAX_PERIOD_US, math.ceil(MIN_QUOTA_US / share))
    return max(MIN_QUOTA_US, round(share * period)), period


@dataclass(frozen=True)
class CgroupLayout:
    """Where the cpu controller lives and which files set a quota."""

    root: Path
    version: int


def find_layout(base: Path = Path("/sys/fs/cgroup")) -> CgroupLayout:
    """The writable cgroup hierarchy with the cpu controller, or a CpuQuotaError saying why not."""
    if os.geteuid() != 0:
        raise CpuQuotaError("CPU quotas per site need root (cgroups)")
    controllers = base / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        subtree = base / "cgroup.subtree_control"
        if "cpu" not in subtree.read_text().split():
            subtree.write_text("+cpu")
        return CgroupLayout(base, 2)
    v1 = base / "cpu"
    if (v1 / "cpu.cfs_quota_us").exists():
        return CgroupLayout(v1, 1)
    raise CpuQuotaError(f"no cgroup cpu controller under {base} (neither cgroup2 with 'cpu' nor v1 cpu)")


class CpuQuotas:
    """A cgroup per site under one parent this object creates and removes."""

    def __init__(self, layout: CgroupLayout | None = None, name: str | None = None) -> None:
        self.layout = layout or find_layout()
        self.parent = self.layout.root / (name or f"innet-geo-{os.getpid()}")
        self.groups: dict[str, Path] = {}
        self.shares: dict[str, float] = {}

    def __enter__(self) -> "CpuQuotas":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _mkdir(self, path: Path) -> None:
        path.mkdir(exist_ok=True)
        if self.layout.version == 2 and path == self.parent:
            (path / "cgroup.subtree_control").write_text("+cpu")

    def set(self, site: str, share: float | None) -> None:
        """Limit ``site``'s processes to ``share`` of one CPU (None: no limit)."""
        if share is not None and not share > 0:
            raise CpuQuotaError(f"CPU share of site {site!r} is {share!r}: must be positive")
        if site not in self.groups:
            self._mkdir(self.parent)
            group = self.parent / f"site-{site}"
            self._mkdir(group)
            self.groups[site] = group
        group = self.groups[site]
        quota, period = quota_for(share)
        if self.layout.version == 2:
            (group / "cpu.max").write_text(f"{'max' if quota < 0 else quota} {period}")
        else:
            (group / "cpu.cfs_quota_us").write_text("-1")  # the period may only shrink under no quota
            (group / "cpu.cfs_period_us").write_text(str(period))
            (group / "cpu.cfs_quota_us").write_text(str(quota))
        self.shares[site] = share if share is not None else 0.0

    def quota(self, site: str) -> tuple[int, int]:
        """(quota us, period us) as the kernel holds it; quota -1: unlimited."""
        group = self.groups[site]
        if self.layout.version == 2:
            q, p = (group / "cpu.max").read_text().split()
            return (-1 if q == "max" else int(q)), int(p)
        return int((group / "cpu.cfs_quota_us").read_text()), int((group / "cpu.cfs_period_us").read_text())

    def add(self, site: str, pid: int) -> None:
        """Move process ``pid`` into ``site``'s cgroup (its threads follow)."""
        if site not in self.groups:
            raise CpuQuotaError(f"no CPU quota for site {site!r}")
        try:
            (self.groups[site] / "cgroup.procs").write_text(str(pid))
        except ProcessLookupError:  # it already exited: nothing to limit
            pass

    def pids(self, site: str) -> list[int]:
        text = (self.groups[site] / "cgroup.procs").read_text()
        return [int(p) for p in text.split()]

    def close(self) -> None:
        """Move every process left inside back to the hierarchy's root; remove the cgroups."""
        for group in self.groups.values():
            try:
                for pid in (group / "cgroup.procs").read_text().split():
                    try:
                        (self.layout.root / "cgroup.procs").write_text(pid)
                    except (ProcessLookupError, OSError):
                        pass
                group.rmdir()
            except FileNotFoundError:
                pass
        self.groups.clear()
        try:
            self.parent.rmdir()
        except FileNotFoundError:
            pass
