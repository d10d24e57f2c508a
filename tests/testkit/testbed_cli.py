"""``innet testbed up`` run in the background as a user runs it, and ``innet`` commands
beside it, for the live-testbed tests of the loopback and Mininet tiers."""

from __future__ import annotations

import functools
import signal
import subprocess
import sys
import time
from pathlib import Path

from innet.polling import poll_until

ROOT = Path(__file__).parents[2]
INNET = [str(ROOT / ".venv" / "bin" / "innet")] if (ROOT / ".venv" / "bin" / "innet").exists() \
    else [sys.executable, "-m", "innet.cli"]
"""The ``innet`` a user types (the venv's console script), or the module when not installed."""
STATE_ENV = "INNET_TESTBED_STATE_DIR"


@functools.cache
def loopback_flags() -> tuple[str, ...]:
    """How ``innet testbed up`` is asked for the loopback backend: ``--backend loopback``, or
    ``--loopback`` where the command still has its own flag."""
    text = subprocess.run([*INNET, "testbed", "up", "--help"], capture_output=True, text=True, timeout=60).stdout
    return ("--backend", "loopback") if "--backend" in text else ("--loopback",)


def innet(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``innet ARGS`` to completion."""
    return subprocess.run([*INNET, *args], capture_output=True, text=True, timeout=timeout, env=env)


def ok(env: dict[str, str], *args: str) -> str:
    """``innet ARGS``'s stdout; fails the test with its stderr unless it exits 0."""
    result = innet(env, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


class TestbedUp:
    """``innet testbed up ARGS`` in the background, its output in the state directory."""

    __test__ = False  # not a pytest test class

    def __init__(self, env: dict[str, str], *args: str, wait: bool = True, timeout: float = 180) -> None:
        self.out = Path(env[STATE_ENV]) / f"up-{time.monotonic_ns()}.out"
        with open(self.out, "w") as out:
            self.proc = subprocess.Popen([*INNET, "testbed", "up", *args], stdout=out, stderr=subprocess.STDOUT,
                                         env=env)
        if wait:
            self.wait_for("is up", timeout)

    def text(self) -> str:
        return self.out.read_text()

    def wait_for(self, text: str, timeout: float) -> None:
        """Until the output holds ``text``; fails with the output when the process ends first."""
        poll_until(lambda: text in self.text() or self.proc.poll() is not None, timeout, what=repr(text))
        assert text in self.text(), self.text()

    def stop(self) -> None:
        """SIGTERM (what ``innet testbed down`` sends), SIGKILL after a minute."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
