"""Processes the testbed starts: marked, recorded, and always ended.

Every process the testbed starts (``innet-switch``, host agents, workers, gloo ranks)
goes through a :class:`ProcessGroup`, which

* adds ``INNET_TESTBED_RUN=<run id>`` to its environment (so a later
  :func:`find_marked` can find it from ``/proc`` even when every record is gone),
* writes ``<state dir>/<run id>/pids`` (pid, start time, name per line),
* ends it in ``close`` (SIGTERM to its process group, SIGKILL after a deadline).

A live run holds an ``flock`` on ``<state dir>/<run id>/lock``; :func:`stale_runs` lists
runs whose lock nobody holds (their owner died), which ``innet.testbed.backends.mininet.clean`` ends.
Nothing here kills by name: only recorded or marked pids, checked again before signalling.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Sequence

import psutil

MARK_ENV = "INNET_TESTBED_RUN"
"""Environment variable carried by every process the testbed starts (value: its run directory)."""
STATE_DIR = Path(tempfile.gettempdir()) / f"innet-testbed-{os.getuid()}"
"""Per-user directory of run records (pids, logs, locks)."""

Spawner = Callable[..., "subprocess.Popen[bytes]"]
"""``subprocess.Popen`` or a Mininet host's ``popen``: argv list plus Popen keyword arguments."""


@dataclass(frozen=True)
class ProcessRecord:
    """One started process as recorded in a run's ``pids`` file."""

    pid: int
    """Process id (of ``mnexec`` for Mininet hosts, which execs the command in place)."""
    start_ticks: int
    """Start time in clock ticks since boot (``/proc/PID/stat`` field 22): guards against pid reuse."""
    name: str
    """What it is, e.g. ``switch`` or ``worker-h2``."""


def _stat(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` from field 3 (state) on, or None when the process is gone. The
    command name before it may hold spaces and parentheses, so it is cut at the last ')'.
    Read here rather than through psutil because the record keeps the start time as integer
    clock ticks (psutil offers only float seconds since the epoch) and ``alive`` needs state
    and start time from one read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def start_ticks(pid: int) -> int | None:
    """``/proc/PID/stat`` start time, or None when the process is gone."""
    fields = _stat(pid)
    return None if fields is None else int(fields[19])


def pid_alive(pid: int) -> bool:
    """``pid`` exists and is no zombie (an exited child its parent has not reaped yet)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def alive(record: ProcessRecord) -> bool:
    """True when the recorded process (not a reuse of its pid) still runs and is no zombie."""
    fields = _stat(record.pid)
    return fields is not None and fields[0] != "Z" and int(fields[19]) == record.start_ticks


def end_process(record: ProcessRecord, timeout: float = 5.0) -> bool:
    """SIGTERM the recorded process (and its process group), SIGKILL after ``timeout``; True if it ran."""
    if not alive(record):
        return False
    for signum, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        for kill in (lambda: os.killpg(record.pid, signum), lambda: os.kill(record.pid, signum)):
            try:
                if alive(record):
                    kill()
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive(record):
                return True
            time.sleep(0.02)
    return True


class ProcessGroup:
    """The processes of one testbed run; ``with ProcessGroup() as procs: procs.spawn(...)``."""

    def __init__(self, run_id: str | None = None, state_dir: Path = STATE_DIR) -> None:
        self.run_id = run_id or f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        self.dir = state_dir / self.run_id
        self.records: list[ProcessRecord] = []
        self.popens: dict[str, subprocess.Popen[bytes]] = {}
        self._lock: IO[str] | None = None
        self._logs: list[IO[bytes]] = []

    def open(self) -> "ProcessGroup":
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.dir / "lock", "w")
        fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        (self.dir / "pids").touch()
        (self.dir / "owner").write_text(f"{os.getpid()} {start_ticks(os.getpid())}\n")
        return self

    def __enter__(self) -> "ProcessGroup":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def log_path(self, name: str) -> Path:
        return self.dir / f"{name}.log"

    def spawn(self, name: str, argv: Sequence[str], spawner: Spawner = subprocess.Popen,
              env: dict[str, str] | None = None, stdout_pipe: bool = False, **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start ``argv`` as ``name``: marked, logged to ``<name>.log`` (stderr too), recorded."""
        if self._lock is None:
            raise RuntimeError(f"process group {self.run_id}: spawn({name!r}) before open()")
        if name in self.popens:
            raise ValueError(f"process group {self.run_id}: a process named {name!r} exists already")
        log = open(self.log_path(name), "wb")
        self._logs.append(log)
        full_env = {**(env if env is not None else os.environ), MARK_ENV: str(self.dir), "PYTHONUNBUFFERED": "1"}
        if spawner is subprocess.Popen:
            kwargs.setdefault("start_new_session", True)
        popen = spawner(list(argv), stdout=subprocess.PIPE if stdout_pipe else log, stderr=log,
                        stdin=subprocess.DEVNULL, env=full_env, **kwargs)
        ticks = start_ticks(popen.pid)
        record = ProcessRecord(popen.pid, ticks if ticks is not None else -1, name)
        self.records.append(record)
        self.popens[name] = popen
        with open(self.dir / "pids", "a") as pids:
            pids.write(f"{record.pid} {record.start_ticks} {name}\n")
        return popen

    def adopt(self, name: str, pid: int) -> None:
        """Record a process started elsewhere (a Mininet host shell) so a crash cleanup ends it."""
        ticks = start_ticks(pid)
        if ticks is None:
            return
        record = ProcessRecord(pid, ticks, name)
        self.records.append(record)
        with open(self.dir / "pids", "a") as pids:
            pids.write(f"{record.pid} {record.start_ticks} {name}\n")

    def log_tail(self, name: str, lines: int = 20) -> str:
        try:
            text = self.log_path(name).read_text(errors="replace")
        except OSError:
            return f"(no log {self.log_path(name)})"
        return "\n".join(text.strip().splitlines()[-lines:]) or "(empty log)"

    def stop(self, name: str, timeout: float = 5.0) -> None:
        """End one process now."""
        for record in self.records:
            if record.name == name:
                end_process(record, timeout)
        popen = self.popens.get(name)
        if popen is not None:
            try:
                popen.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass

    def forget(self, name: str) -> None:
        """Drop an ended process from the group (its name can be used again)."""
        self.popens.pop(name, None)
        self.records = [r for r in self.records if r.name != name]

    def end_spawned(self) -> None:
        """End every process started with ``spawn`` (adopted ones stay), newest first."""
        for record in reversed(self.records):
            if record.name in self.popens:
                end_process(record)
        for popen in self.popens.values():
            try:
                popen.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass

    def close(self, keep_logs: bool = True) -> None:
        """End every process (newest first), release the lock; logs stay unless ``keep_logs`` is False."""
        try:
            for record in reversed(self.records):
                end_process(record)
            for pid, _ in find_marked(only_run=str(self.dir)):
                ticks = start_ticks(pid)
                if ticks is not None:
                    end_process(ProcessRecord(pid, ticks, "marked"))
            for popen in self.popens.values():
                try:
                    popen.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            for log in self._logs:
                log.close()
            self._logs.clear()
            if self._lock is not None:
                (self.dir / "pids").unlink(missing_ok=True)
                self._lock.close()
                self._lock = None
            if not keep_logs:
                shutil.rmtree(self.dir, ignore_errors=True)


def read_owner(run_dir: Path) -> ProcessRecord | None:
    """The process that opened the run (``owner`` file), or None."""
    try:
        pid, ticks = (run_dir / "owner").read_text().split()[:2]
        return ProcessRecord(int(pid), int(ticks), "owner")
    except (OSError, ValueError):
        return None


def read_records(run_dir: Path) -> list[ProcessRecord]:
    """The ``pids`` file of a run directory (empty when missing)."""
    try:
        lines = (run_dir / "pids").read_text().splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[0].isdigit():
            records.append(ProcessRecord(int(parts[0]), int(parts[1]), parts[2]))
    return records


def run_is_live(run_dir: Path) -> bool:
    """True while the run's owner holds its lock."""
    try:
        with open(run_dir / "lock", "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(lock, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def stale_runs(state_dir: Path = STATE_DIR) -> list[Path]:
    """Run directories whose owner is gone (nobody holds the lock)."""
    if not state_dir.is_dir():
        return []
    return sorted(d for d in state_dir.iterdir() if d.is_dir() and not run_is_live(d))


def find_marked(only_run: str | None = None) -> list[tuple[int, str]]:
    """(pid, run directory) of readable processes carrying ``INNET_TESTBED_RUN`` (of ``only_run`` if given)."""
    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            run = proc.environ().get(MARK_ENV)
        except psutil.Error:
            continue  # gone, or another user's
        if run is not None and (only_run is None or run == only_run):
            found.append((proc.pid, run))
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (benchmarks report CPU per process)."""
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)
