"""One long-lived ``simple_switch_CLI`` per switch, fed commands on stdin.

Each ``simple_switch_CLI`` start costs about half a second of CPU (a Python interpreter,
Thrift, and the switch's JSON fetched and parsed) before its first command. The controller
reads and writes registers one register at a time (``load_params`` alone is 2K registers),
so a process per call made ``innet demo --switch-impl bmv2`` spend most of an hour starting
CLIs. A session starts the CLI once and then pays a Thrift round trip per command.

The CLI is Python's ``cmd`` loop: with stdin not a terminal it still writes its prompt
(``RuntimeCmd: ``) before reading each line, so the answer to N commands is complete after
N more prompts. A command's output (values, ``Error: ...``) is printed before the next prompt.
Commands go in batches small enough that neither pipe can fill while the other waits.
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time

from innet.controller.errors import ControllerError

PROMPT = b"RuntimeCmd: "
BATCH = 200
"""Commands written before their prompts are read (~60 bytes each: well under a 64 KiB pipe)."""


def missing_cli(argv0: str) -> ControllerError:
    """The error for a ``simple_switch_CLI`` that is not there (how to get it)."""
    return ControllerError(f"register fallback: {argv0!r} not found on PATH (BMv2's simple_switch_CLI is "
                           "needed to access registers on BMv2: install BMv2 from p4lang's packages, use the "
                           "p4lang/behavioral-model image, or build it from source)")


def exited(argv: list[str], returncode: int, output: str) -> ControllerError:
    """The error for a CLI that exited: its status and what it printed, on one line."""
    why = output.strip()
    lines = why.splitlines()
    why = f"{lines[0]} ({' '.join(lines[1:])})" if len(lines) > 1 else why
    return ControllerError(f"register fallback: {' '.join(argv)} exited with {returncode}: {why[:500]}")


class CliSession:
    """A :data:`innet.controller.registers.Runner` that keeps one CLI process per argv
    (started at the first call, started again after it died); ``close`` ends them."""

    def __init__(self, timeout: float = 120.0) -> None:
        self.timeout = timeout
        """Seconds a batch of commands (or the start) may take before the CLI is killed."""
        self._procs: dict[tuple[str, ...], subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()
        self.starts = 0
        """Processes started so far (a measure of the cost this class removes)."""

    @property
    def running(self) -> int:
        """CLI processes alive now."""
        return sum(1 for proc in self._procs.values() if proc.poll() is None)

    def __call__(self, argv: list[str], stdin: str) -> str:
        commands = [line for line in stdin.splitlines() if line.strip()]  # an empty line repeats the last command
        with self._lock:
            proc = self._process(argv)
            out = [PROMPT.decode()]
            for at in range(0, len(commands), BATCH):
                batch = commands[at:at + BATCH]
                try:
                    assert proc.stdin is not None
                    proc.stdin.write(("\n".join(batch) + "\n").encode())
                    proc.stdin.flush()
                except (BrokenPipeError, OSError):
                    pass  # it died: reading sees EOF and says why
                out.append(self._read(proc, argv, len(batch)))
            return "".join(out)

    def _process(self, argv: list[str]) -> subprocess.Popen[bytes]:
        key = tuple(argv)
        proc = self._procs.get(key)
        if proc is not None and proc.poll() is None:
            return proc
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    env=env)
        except FileNotFoundError:
            raise missing_cli(argv[0]) from None
        self.starts += 1
        self._procs[key] = proc
        self._read(proc, argv, 1)  # the banner, up to the first prompt
        return proc

    def _read(self, proc: subprocess.Popen[bytes], argv: list[str], prompts: int) -> str:
        """Output up to and including the ``prompts``-th prompt (ControllerError when the
        CLI exits first or the deadline passes; the process is then gone)."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        buf = bytearray()
        found, pos = 0, 0
        end = time.monotonic() + self.timeout
        while found < prompts:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self._kill(argv)
                raise ControllerError(f"register fallback: {' '.join(argv)} did not answer within "
                                      f"{self.timeout:g} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                self._procs.pop(tuple(argv), None)
                try:
                    code = proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    code = proc.wait()
                raise exited(argv, code, buf.decode(errors="replace"))
            buf += chunk
            while (i := buf.find(PROMPT, pos)) >= 0:
                found, pos = found + 1, i + len(PROMPT)
        return buf.decode(errors="replace")

    def _kill(self, argv: list[str]) -> None:
        proc = self._procs.pop(tuple(argv), None)
        if proc is not None:
            _stop(proc)

    def close(self) -> None:
        """End every CLI (EOF first, as a user would; killed if it does not go)."""
        with self._lock:
            procs, self._procs = list(self._procs.values()), {}
        for proc in procs:
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
