"""p4runtime-shell in a venv of its own (it pins p4runtime 1.4.1 and protobuf<3.21, which
clash with innet's protos), kept in the user's cache so CI creates it once per machine,
never inside the repository.

The version is pinned: a new release of the shell cannot change what the tests check
without a commit here. The venv path carries the version, so changing the pin builds a
fresh venv next to the old one.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

P4RUNTIME_SHELL = "p4runtime-shell==0.0.6"
"""The pinned shell (0.0.6 is the newest release; it brings p4runtime 1.4.1)."""


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/innet`` (default ``~/.cache/innet``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "innet"


def shell_venv() -> Path:
    """Where the shell's venv lives."""
    return cache_dir() / ("p4runtime-shell-" + P4RUNTIME_SHELL.split("==")[1] + "-venv")


def _run(cmd: list[str]) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"creating the p4runtime-shell venv failed: {' '.join(cmd)}\n{result.stderr[-2000:]}")


def ensure_shell_python() -> Path:
    """The Python of a venv with p4runtime-shell installed: created on first use, then
    reused. A failing pip is a RuntimeError naming the command (a test error, not a skip)."""
    venv = shell_venv()
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import p4runtime_sh.shell"]
    if python.exists() and subprocess.run(probe, cwd="/", capture_output=True).returncode == 0:
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    _run(["/usr/bin/python3", "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "pip"), "install", "-q", P4RUNTIME_SHELL])
    return python
