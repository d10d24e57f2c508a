"""mypy over the whole package, so type errors fail CI like any other test (docs/design.md, "Code conventions").

The repository root is the ``innet`` package (setup.py maps it), which mypy cannot see
through the editable-install hook; a temporary folder with an ``innet`` symlink to the
root gives it the same import names the code uses. The tests' own ``testkit`` (test
doubles) is checked too.
"""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("innet.wire", "innet.switch", "innet.host", "innet.controller", "innet.testbed")
MODULES = ("innet.cli", "innet.conformance", "innet.argtypes", "innet.p4c_samples", "innet.p4c_errors", "innet.names", "innet.native_build",
           "innet.plans", "innet.polling", "innet.children", "innet.rss")


@pytest.mark.slow
def test_mypy_is_clean(tmp_path: Path) -> None:
    (tmp_path / "innet").symlink_to(REPO, target_is_directory=True)
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
           "--cache-dir", str(tmp_path / ".mypy_cache")]
    for p in PACKAGES:
        cmd += ["-p", p]
    for m in MODULES:
        cmd += ["-m", m]
    cmd += ["-p", "testkit"]
    mypypath = f"{tmp_path}:{REPO / 'tests'}"
    proc = subprocess.run(cmd, cwd=tmp_path, env={"MYPYPATH": mypypath, "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
