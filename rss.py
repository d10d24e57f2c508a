"""Resident memory of a process: the one reader the soak test, LuWu's nodes, its training
workers and the node benchmark share (psutil for another process's RSS, the kernel's high
water mark for this process's peak). Root-level so host and testbed code can both use it.
"""

from __future__ import annotations

import os
import resource

import psutil


def rss_bytes(pid: int | None = None) -> int | None:
    """Resident set size of process ``pid`` (default this one); None when it is gone or not
    ours to read."""
    try:
        return int(psutil.Process(pid or os.getpid()).memory_info().rss)
    except psutil.Error:
        return None


def peak_rss_bytes() -> int:
    """This process's peak resident set size: ``VmHWM`` of /proc/self/status, which belongs to
    the address space and starts again at exec. ``ru_maxrss`` does not: Linux carries it over
    fork and exec, so a child of a large parent (a benchmark run under pytest) would report
    the parent's peak. ``ru_maxrss`` only where /proc is not there."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
