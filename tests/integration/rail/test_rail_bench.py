"""``innet bench --topo rail-*`` on loopback: every collective of the rail comparison runs and
is saved (JSON + PNG) with the CLI's defaults (no ``-k``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from innet.testbed.core.gloo import gloo_available


@pytest.mark.slow
@pytest.mark.parametrize("topo,rows,not_applicable", [
    ("rail-only", ["hierarchical INA", "hierarchical ring", "gloo ring", "all-to-all two-step"],
     ["flat INA", "all-to-all direct"]),
    ("rail-optimized", ["hierarchical INA", "hierarchical ring", "flat INA (spine)", "gloo ring", "all-to-all direct",
                        "all-to-all two-step"], []),
])
def test_rail_bench_runs_every_collective_the_design_has(tmp_path: Path, topo: str, rows: list[str],
                                                         not_applicable: list[str]) -> None:
    if not gloo_available():
        pytest.skip("torch (the gloo baseline's optional dependency) is not installed")
    proc = subprocess.run([sys.executable, "-m", "innet.cli", "bench", "--topo", topo, "--backend", "loopback",
                           "--domains", "2", "--gpus-per-domain", "2", "--sizes", "1K", "--pair-bytes", "1000",
                           "--repeats", "1", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=360)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [doc_path] = tmp_path.glob(f"rail-bench-{topo}-*.json")
    assert doc_path.with_suffix(".png").is_file()
    doc = json.loads(doc_path.read_text())
    assert [(r["collective"], r["ok"]) for r in doc["rows"]] == [(name, True) for name in rows]
    assert doc["failures"] == [] and doc["config"]["k"] == 64
    assert [n["collective"] for n in doc["not_applicable"]] == not_applicable
