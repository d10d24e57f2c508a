"""What machine produced a benchmark's numbers: every benchmark script records the same facts.

Every figure names its machine and load (docs/design.md, "Benchmarks"); every benchmark takes
them from here so their JSON files agree on the keys.
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from dataclasses import dataclass
from pathlib import Path

from innet.testbed.core.paths import REPO
from innet.testbed.core.records import JsonRecord


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown" where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> str:
    """1/5/15-minute load averages, e.g. ``"2.1 1.8 1.5"``."""
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def commit() -> str | None:
    """The checkout's short commit (None outside a git checkout)."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def torch_version() -> str | None:
    """torch's installed version, read from its metadata (importing torch takes seconds)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class Machine(JsonRecord):
    """The ``machine`` object of every saved benchmark document (its JSON is these fields in
    this order). Documents are only written with it: renderers read the saved JSON, so a
    benchmark that adds facts of its own (a load average after the run, the cores it used)
    adds them to ``to_json()``'s dict, its document edge."""

    host: str
    cpu: str
    """:func:`cpu_model`."""
    cores: int | None
    """``os.cpu_count()``."""
    kernel: str
    platform: str
    python: str
    load_average: str
    """:func:`load_average` when the record was made."""
    torch: str | None
    """:func:`torch_version`."""
    commit: str | None
    """:func:`commit`."""


def describe() -> Machine:
    """This machine now: host, cpu, cores, kernel, platform, python, load average, torch and
    commit."""
    return Machine(host=platform.node(), cpu=cpu_model(), cores=os.cpu_count(), kernel=platform.release(),
                   platform=platform.platform(), python=platform.python_version(), load_average=load_average(),
                   torch=torch_version(), commit=commit())


def switch_description(executor: str, switch_impl: str = "innet") -> str:
    """The switch a run used, for captions and JSON: ``auto`` is resolved the way innet-switch
    resolves it for innet.p4 (native when a C compiler is present; innet.p4 has no construct
    the native executor refuses)."""
    from innet.native_build import compiler_path

    if switch_impl == "bmv2":
        return "simple_switch_grpc (p4lang BMv2, p4c-bm2-ss)"
    if executor == "auto":
        executor = "native" if compiler_path() is not None else "python (no C compiler)"
    return f"innet-switch (embedded P4 target, {executor} executor)"
