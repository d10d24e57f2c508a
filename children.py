"""Child processes: ask for a signal when the parent dies, and end a ``Popen`` politely.

Both were written out by hand wherever a process was started (the host agent, the P4Runtime
benchmark's switch, the Mininet switch node, compose roles, micro-benchmarks). Root-level so
host and testbed code can both use them; the testbed's marked process groups
(``innet.testbed.core.processes``) build on the same SIGTERM-then-SIGKILL order.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
from typing import Any

_PR_SET_PDEATHSIG = 1


def die_with_parent(signum: int = signal.SIGTERM) -> bool:
    """Have the kernel send ``signum`` to the calling process when its parent dies, even by
    SIGKILL (Linux ``prctl``). False where that is not available: the caller then needs
    another sign of the parent's death (a pipe's EOF). Usable as a ``preexec_fn``.

    The kernel counts the *thread* that forked as the parent: when that thread exits, the
    signal comes although the parent process lives on."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def end_popen(popen: "subprocess.Popen[Any]", timeout: float = 10.0, kill_timeout: float = 5.0) -> int | None:
    """SIGTERM ``popen``, SIGKILL it when it has not exited after ``timeout`` seconds; its exit
    status (None when even SIGKILL did not end it within ``kill_timeout``, e.g. stuck in the
    kernel). A process that has exited already is only reaped."""
    if popen.poll() is None:
        popen.terminate()
        try:
            return popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            popen.kill()
    try:
        return popen.wait(timeout=kill_timeout)
    except subprocess.TimeoutExpired:
        return None
