"""Remove what a crashed testbed run left behind (``innet testbed cleanup``).

What a run can leave: processes it started (marked with ``INNET_TESTBED_RUN`` and
recorded in its run directory, see :mod:`innet.testbed.core.processes`), Mininet host shells
(recorded there too), ``innet-switch`` processes of Mininet switch nodes (recorded by
``innet.testbed.backends.mininet.switch`` in its own state directory) and root-namespace
interfaces ``<switch>-eth<N>`` (whose deletion also removes the host ends and their tc
qdiscs). Runs that are still alive (their lock is held) are never touched; nothing is
killed by name, only recorded or marked pids.
"""

from __future__ import annotations

import contextlib
import fcntl
import signal
import time
import os
import re
import shutil
import subprocess
from pathlib import Path

from innet.polling import PollTimeout, poll_until
from innet.testbed.core.processes import (
    STATE_DIR,
    ProcessRecord,
    alive,
    end_process,
    find_marked,
    read_owner,
    read_records,
    run_is_live,
    stale_runs,
    start_ticks,
)

MININET_STATE_DIR = Path("/tmp/innet-mininet")
"""State directory of ``innet.testbed.backends.mininet.switch`` (its pid files and its lock)."""
SWITCHES_FILE = "switches"
"""File in a run directory naming the Mininet switches of the run, one per line."""


def interfaces() -> list[str]:
    """Names of the root network namespace's interfaces."""
    try:
        return sorted(os.listdir("/sys/class/net"))
    except OSError:
        return []


def innet_interfaces(switch_names: list[str]) -> list[str]:
    """Root-namespace interfaces ``<switch>-eth<N>`` of the given switches."""
    pattern = re.compile("|".join(rf"{re.escape(n)}-eth\d+" for n in switch_names)) if switch_names else None
    return [i for i in interfaces() if pattern is not None and pattern.fullmatch(i)]


def _mininet_cleanup(switch_names: list[str]) -> list[str]:
    """Leftover switch processes and interfaces, unless a Mininet run holds the lock."""
    done: list[str] = []
    if os.geteuid() != 0:
        return done
    MININET_STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(MININET_STATE_DIR / "lock", "a") as lock:  # "a": the holder's pid in it stays
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return ["a Mininet run is live (its lock is held): left its switches and interfaces alone"]
        from innet.testbed.backends.mininet.switch import cleanup_leftovers

        done += cleanup_leftovers(switch_names, MININET_STATE_DIR)
        for iface in innet_interfaces(switch_names):
            subprocess.run(["ip", "link", "del", iface], capture_output=True, timeout=30)
            done.append(f"deleted leftover interface {iface}")
    return done


def cleanup(state_dir: Path = STATE_DIR, switch_names: tuple[str, ...] = ("s1",),
            mininet: bool = True) -> list[str]:
    """End leftovers of dead runs (and, with ``mininet``, of Mininet runs when none is live);
    a list of what was done (empty when there was nothing)."""
    done: list[str] = []
    switches = set(switch_names)
    for run_dir in stale_runs(state_dir):
        for record in reversed(read_records(run_dir)):
            if end_process(record, timeout=2.0):
                done.append(f"ended {record.name} (pid {record.pid}) of crashed run {run_dir.name}")
        try:
            switches.update(s for s in (run_dir / SWITCHES_FILE).read_text().split() if s)
        except OSError:
            pass
        shutil.rmtree(run_dir, ignore_errors=True)
        done.append(f"removed {run_dir} (run directory of a crashed run)")
    for pid, run in find_marked():
        run_dir = Path(run)
        if run_dir.parent != state_dir or run_is_live(run_dir):
            continue  # another state directory's run, or a live one
        ticks = start_ticks(pid)
        if ticks is not None and end_process(ProcessRecord(pid, ticks, "marked"), timeout=2.0):
            done.append(f"ended process {pid} of run {run_dir.name}")
    if mininet:
        done += _mininet_cleanup(sorted(switches))
    from innet.testbed.core.state import clean_stale

    return done + clean_stale()


def down(state_dir: Path = STATE_DIR, timeout: float = 60.0) -> list[str]:
    """Stop live runs (SIGTERM to the ``innet testbed up`` process that owns each, which tears
    its testbed down), then :func:`cleanup`; what was done."""
    done: list[str] = []
    if state_dir.is_dir():
        for run_dir in sorted(d for d in state_dir.iterdir() if d.is_dir() and run_is_live(d)):
            owner = read_owner(run_dir)
            if owner is None or not alive(owner):
                continue
            os.kill(owner.pid, signal.SIGTERM)
            with contextlib.suppress(PollTimeout):  # reported below as still live
                poll_until(lambda: not run_is_live(run_dir), timeout, interval=0.1, what=f"run {run_dir.name} stopped")
            done.append(f"stopped run {run_dir.name} (owner pid {owner.pid})"
                        + ("" if not run_is_live(run_dir) else f": still live after {timeout:g} s"))
    return done + cleanup(state_dir)
