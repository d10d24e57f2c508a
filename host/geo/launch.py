"""Start the stage processes of one or more pipelines, wire them, collect what they print.

Stages are started last to first: each stage > 0 prints the port it listens on, which the
coordinator hands to the stage before it as ``next_address``. ``spawn`` decides where a
process runs (default: a local subprocess; a testbed passes one that starts it on a site's
host). Every process started here is ended in ``finally``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from innet.host.geo.stage_process import WORKER_MODULE, StageJob

Spawn = Callable[[Any, str, Sequence[str]], subprocess.Popen[bytes]]
"""Starts one worker process: (its job, a name for messages, argv)."""
OnRecord = Callable[[StageJob, dict[str, Any]], None]
"""Called (from a reader thread) with every JSON line a stage prints, as it arrives."""


class LaunchError(RuntimeError):
    """A stage process failed or did not start in time; names it and shows its stderr."""


@dataclass(frozen=True)
class StageOutput:
    index: int
    records: tuple[dict[str, Any], ...]

    def of(self, event: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("event") == event]


SINGLE_THREAD_BLAS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""Toy-sized matrices: BLAS threads only add contention spikes (tens of ms) on a shared machine."""


def local_spawn(job: Any, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **SINGLE_THREAD_BLAS})


class WorkerProc:
    """A started worker: its JSON lines as they arrive, its stderr, and how to end it."""

    def __init__(self, name: str, popen: subprocess.Popen[bytes],
                 on_record: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.name, self.popen = name, popen
        self.on_record = on_record
        self.lines: list[dict[str, Any]] = []
        self.stderr = b""
        self._cond = threading.Condition()
        self._out = threading.Thread(target=self._read_out, daemon=True)
        self._err = threading.Thread(target=self._read_err, daemon=True)
        self._out.start()
        self._err.start()

    def _read_out(self) -> None:
        assert self.popen.stdout is not None
        for raw in self.popen.stdout:
            line = raw.decode(errors="replace").strip()
            if line.startswith("{"):
                record = json.loads(line)
                with self._cond:
                    self.lines.append(record)
                    self._cond.notify_all()
                if self.on_record is not None:
                    self.on_record(record)
        with self._cond:
            self._cond.notify_all()

    def _read_err(self) -> None:
        assert self.popen.stderr is not None
        self.stderr = self.popen.stderr.read()

    def wait_port(self, timeout: float) -> int:
        return int(self.wait_event("listening", ("listening", "listen"), timeout)["port"])

    def wait_event(self, event: str, what: tuple[str, str], timeout: float) -> dict[str, Any]:
        """The first record of ``event``; LaunchError naming what it did not do (``what``: as
        "before ..." and as "did not ...") when the process exits first or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for r in self.lines:
                    if r.get("event") == event:
                        return r
                if self.popen.poll() is not None and not self._out.is_alive():
                    self._err.join(1.0)
                    raise LaunchError(f"{self.name} exited with status {self.popen.returncode} before {what[0]}: "
                                      f"{self.stderr.decode(errors='replace')[-1500:]}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise LaunchError(f"{self.name} did not {what[1]} within {timeout:g} s")
                self._cond.wait(min(remaining, 0.2))

    def finish(self, deadline: float) -> None:
        try:
            self.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise LaunchError(f"{self.name} did not finish in time; stderr: "
                              f"{self.stderr.decode(errors='replace')[-1500:]}") from None
        self._out.join(5.0)
        self._err.join(5.0)
        if self.popen.returncode != 0:
            raise LaunchError(f"{self.name} exited with status {self.popen.returncode}: "
                              f"{self.stderr.decode(errors='replace').strip()[-1500:]}")

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(5.0)


def launch(pipelines: Sequence[Sequence[StageJob]], spawn: Spawn = local_spawn, timeout: float = 300.0,
           connect_host: Callable[[StageJob], str] | None = None,
           on_record: OnRecord | None = None) -> list[list[StageOutput]]:
    """Run every pipeline (a list of stage jobs in stage order); per pipeline, per stage, what
    the stage printed. ``connect_host`` gives the address other stages reach a stage at
    (default: its ``listen`` host); ``on_record`` sees every record as it arrives (e.g. to
    change a site's CPU quota at a given step). Several probing pipelines probe one at a
    time: the next is started once the one before reports its links probed, and all train
    once the last has (a start file their first stages wait for), so no probe shares the
    links or the CPU with another pipeline's start-up, probe or training."""
    procs: list[WorkerProc] = []
    per_pipe: list[list[WorkerProc]] = []
    deadline = time.monotonic() + timeout
    gate_dir = tempfile.mkdtemp(prefix="innet-geo-start-") if len(pipelines) > 1 else None
    start_file = os.path.join(gate_dir, "start") if gate_dir is not None else None
    try:
        for p, jobs in enumerate(pipelines):
            started: list[WorkerProc] = []
            next_addr: tuple[str, int] | None = None
            for job in reversed(jobs):
                job = replace(job, next_address=next_addr, start_file=start_file if job.probe else None)
                name = f"pipeline {p} stage {job.index}"
                hook = (lambda record, job=job: on_record(job, record)) if on_record is not None else None
                proc = WorkerProc(name, spawn(job, name, [sys.executable, "-m", WORKER_MODULE, job.to_json()]), hook)
                procs.append(proc)
                started.insert(0, proc)
                if job.index > 0:
                    port = proc.wait_port(max(1.0, deadline - time.monotonic()))
                    host = connect_host(job) if connect_host else job.listen[0]
                    next_addr = (host, port)
            per_pipe.append(started)
            if start_file is not None and jobs and jobs[0].probe:
                started[0].wait_event("probed", ("probing its links", "probe its links"),
                                      max(1.0, deadline - time.monotonic()))
        if start_file is not None:
            with open(start_file, "w", encoding="utf-8"):
                pass
        for proc in procs:
            proc.finish(deadline)
        return [[StageOutput(i, tuple(proc.lines)) for i, proc in enumerate(pipe)] for pipe in per_pipe]
    finally:
        for proc in procs:
            proc.kill()
        if gate_dir is not None:
            shutil.rmtree(gate_dir, ignore_errors=True)
