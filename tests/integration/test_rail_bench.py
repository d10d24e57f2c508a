"""``innet bench --topo rail-*`` on loopback: every collective of the rail comparison runs and
is saved (JSON + PNG) with the CLI's defaults (no ``-k``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from innet.testbed.gloo import gloo_available


@pytest.mark.slow
def test_rail_only_bench_runs_hierarchical_ina_gloo_and_alltoall(tmp_path: Path) -> None:
    if not gloo_available():
        pytest.skip("torch (the gloo baseline's optional dependency) is not installed")
    proc = subprocess.run([sys.executable, "-m", "innet.cli", "bench", "--topo", "rail-only", "--backend", "loopback",
                           "--domains", "2", "--gpus-per-domain", "2", "--sizes", "1K", "--pair-bytes", "1000",
                           "--repeats", "1", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [doc_path] = tmp_path.glob("rail-bench-rail-only-*.json")
    assert doc_path.with_suffix(".png").is_file()
    doc = json.loads(doc_path.read_text())
    assert [(r["collective"], r["ok"]) for r in doc["rows"]] == [
        ("hierarchical INA", True), ("gloo ring", True), ("all-to-all two-step", True)]
    assert doc["failures"] == [] and doc["config"]["k"] == 64
    assert [n["collective"] for n in doc["not_applicable"]] == ["flat INA", "all-to-all direct"]
