"""What machine produced a benchmark's numbers: every benchmark script records the same facts.

STYLE.md asks that every figure names its machine and load; the scripts under ``testbed``
(``bench``, ``bench_pipeline``, ``bench_p4runtime``, ``bench_agent``, ``bench_veth``,
``geo_bench``) take them from here so their JSON files agree on the keys.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown" where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> str:
    """1/5/15-minute load averages, e.g. ``"2.1 1.8 1.5"``."""
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def describe() -> dict[str, Any]:
    """host, cpu, cores, kernel, python and load_average, as benchmark JSON records them."""
    return {"host": platform.node(), "cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version(), "load_average": load_average()}
