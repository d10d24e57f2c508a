"""testbed/core/apt_locks.py (setup.sh waits for another apt/dpkg): fcntl locks as dpkg takes them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from innet.testbed.core import apt_locks

SCRIPT = Path(apt_locks.__file__)


def _hold(path: Path, seconds: float) -> subprocess.Popen[bytes]:
    """Another process holding an fcntl lock on ``path`` (as dpkg does) for ``seconds``."""
    code = ("import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.lockf(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(float(sys.argv[2]))")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path), str(seconds)], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"held\n"
    return proc


def test_free_and_missing_locks_pass_at_once(tmp_path: Path) -> None:
    free = tmp_path / "lock"
    free.touch()
    assert apt_locks.held([str(free), str(tmp_path / "missing")]) == []
    assert apt_locks.wait(0, [str(free)], say=lambda _: None)


def test_waits_until_released(tmp_path: Path) -> None:
    lock = tmp_path / "lock-frontend"
    holder = _hold(lock, 1.0)
    lines: list[str] = []
    try:
        start = time.monotonic()
        assert apt_locks.wait(20, [str(lock)], say=lines.append, interval=0.05)
        assert time.monotonic() - start > 0.3
    finally:
        holder.kill()
        holder.wait()
    assert lines == [f"setup.sh: waiting for another apt/dpkg to release {lock} (up to 20 s)"]


def test_deadline_names_the_held_lock(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    holder = _hold(lock, 30)
    try:
        proc = subprocess.run(["/usr/bin/python3", str(SCRIPT), "0.3", str(lock)], capture_output=True,
                              text=True, timeout=20)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 1
    assert f"another apt/dpkg still holds {lock} after 0.3 s" in proc.stderr.splitlines()[-1]
    assert subprocess.run(["/usr/bin/python3", str(SCRIPT), "soon"], capture_output=True).returncode == 2
