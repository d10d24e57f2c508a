"""Wait until no other apt/dpkg holds the package-system locks (used by setup.sh).

    /usr/bin/python3 testbed/core/apt_locks.py SECONDS [LOCK_FILE ...]

setup.sh runs before any venv exists, so this file imports only the standard library and
is run by path. dpkg and apt take fcntl (POSIX record) locks on these files; probing with
the same kind of lock is the only check that sees them (flock(1) does not). Exits 0 when all
are free, 1 with one line naming the held locks when SECONDS pass first.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from typing import Callable, Sequence

APT_LOCKS = ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/lib/apt/lists/lock",
             "/var/cache/apt/archives/lock")


def held(paths: Sequence[str]) -> list[str]:
    """The lock files another process holds now (missing files are free)."""
    busy = []
    for path in paths:
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(fd, fcntl.LOCK_UN)
        except OSError:
            busy.append(path)
        finally:
            os.close(fd)
    return busy


def wait(seconds: float, paths: Sequence[str] = APT_LOCKS, say: Callable[[str], None] = print,
         interval: float = 1.0) -> bool:
    """True once every lock is free; False (after saying which are held) at the deadline."""
    deadline = time.monotonic() + seconds
    announced = False
    while True:
        busy = held(paths)
        if not busy:
            return True
        if time.monotonic() >= deadline:
            say(f"setup.sh: another apt/dpkg still holds {', '.join(busy)} after {seconds:g} s; wait for it "
                "to finish (or raise INNET_APT_WAIT) and run setup.sh again")
            return False
        if not announced:
            say(f"setup.sh: waiting for another apt/dpkg to release {busy[0]} (up to {seconds:g} s)")
            announced = True
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))


def main(argv: Sequence[str]) -> int:
    try:
        seconds = float(argv[0])
    except (IndexError, ValueError):
        print("usage: apt_locks.py SECONDS [LOCK_FILE ...]", file=sys.stderr)
        return 2
    paths = list(argv[1:]) or list(APT_LOCKS)
    return 0 if wait(seconds, paths, lambda line: print(line, file=sys.stderr)) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
