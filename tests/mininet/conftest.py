"""Mininet tier: needs root (network namespaces, veths, AF_PACKET) and Debian's mininet.

Every test here is skipped, with the precondition named, only when not running as root;
CI runs as root, so there these tests always run. A missing ``mininet`` package or
``mnexec`` as root is an error, not a skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.mininet)


@pytest.fixture(scope="session", autouse=True)
def root() -> None:
    if os.geteuid() != 0:
        pytest.skip("Mininet tier needs root (euid 0): network namespaces, veths, AF_PACKET")


@pytest.fixture(scope="session")
def basic_forward(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(P4Info text, device config) of p4/examples/basic_forward.p4 compiled by innet-p4c."""
    out = tmp_path_factory.mktemp("basic_forward")
    source = REPO / "p4" / "examples" / "basic_forward.p4"
    result = subprocess.run([sys.executable, "-m", "innet.switch.cli.p4c", str(source), "-o", str(out)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return out / "p4info.txtpb", out / "basic_forward.innet.json"
