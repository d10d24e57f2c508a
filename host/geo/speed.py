"""Device speed: time a probe operator on a site's own process.

OP-Fence's cost model divides each operator's measured time by its device's relative speed
(``SiteNetwork.speed``). The workload is measured once, in the planning process; what differs
per site is how fast that site's device runs the same arithmetic. So each site runs one fixed
probe operator (a Linear forward and backward on float32, one BLAS thread) for a while in a
process placed like its stages (on its host, under its CPU quota) and reports seconds per
probe; a site's speed is the reference process's time over the site's.

The probe runs for ``duration`` seconds, not a fixed count of repeats: a CPU quota (cgroup
``cpu.max`` / ``cpu.cfs_quota_us``) only throttles a process once it has used its share of a
period, so a probe shorter than a few periods would run at full speed under any quota.

    python -m innet.host.geo.speed 0.5      # prints {"event": "probe", "probe_s": ..., "count": ...}
"""

from __future__ import annotations

import json
import math
import sys
import time
from typing import Mapping, Sequence

import numpy as np

PROBE_SHAPE = (64, 128, 128)
"""Batch, inputs, outputs of the probe Linear: ~1-2 ms per forward+backward here."""


class SpeedError(ValueError):
    """Bad speeds or probe timings; names the site and value."""


def probe_once(x: np.ndarray, w: np.ndarray) -> float:
    """One forward and backward of ``y = x @ w``; returns a value so nothing is optimised away."""
    y = x @ w
    gw = x.T @ y
    gx = y @ w.T
    return float(gw[0, 0] + gx[0, 0])


def probe(duration: float = 0.5, seed: int = 0) -> tuple[float, int]:
    """Seconds per probe operator (wall-clock, so quota throttling counts) over ``duration``
    seconds, and how many ran."""
    batch, n_in, n_out = PROBE_SHAPE
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, n_in)).astype(np.float32)
    w = rng.standard_normal((n_in, n_out)).astype(np.float32)
    probe_once(x, w)  # first call: allocation, BLAS start-up
    count = 0
    start = time.perf_counter()
    while True:
        probe_once(x, w)
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= duration:
            return elapsed / count, count


def check_speeds(speeds: Mapping[str, float], sites: Sequence[str]) -> dict[str, float]:
    """Speeds as given, every site named and every value positive and finite (one message naming
    the first that is not)."""
    out = {}
    for site, value in speeds.items():
        if site not in sites:
            raise SpeedError(f"speed for site {site!r}: no such site (sites: {', '.join(sites)})")
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise SpeedError(f"speed of site {site!r} is {value!r}: must be a positive number")
        out[site] = float(value)
    return out


def relative_speeds(reference_s: float, site_s: Mapping[str, float]) -> dict[str, float]:
    """Each site's speed relative to the reference process: reference seconds per probe over the
    site's (2.0: the site runs the probe twice as fast)."""
    if not reference_s > 0:
        raise SpeedError(f"reference probe time {reference_s!r}: must be positive")
    out = {}
    for site, t in site_s.items():
        if not t > 0:
            raise SpeedError(f"probe time of site {site!r} is {t!r}: must be positive")
        out[site] = reference_s / t
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        duration = float(args[0]) if args else 0.5
    except ValueError:
        print(f"innet.host.geo.speed: duration {args[0]!r}: expected seconds", file=sys.stderr)
        return 2
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        per, count = probe(duration)
    else:
        with threadpool_limits(1):
            per, count = probe(duration)
    print(json.dumps({"event": "probe", "probe_s": per, "count": count}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
