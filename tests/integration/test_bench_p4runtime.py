"""The switch-process benchmark runs end to end at a tiny size (no timing assertions)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from innet.testbed.microbench import p4runtime as bench_p4runtime


def test_write_benchmark_rows():
    rows = bench_p4runtime.bench_writes(rounds=1, max_seconds=5, entries=20)
    assert [(r.op, r.batch, r.entries) for r in rows] == [
        ("INSERT", 1, 20), ("DELETE", 1, 20), ("INSERT", 20, 20), ("DELETE", 20, 20)]
    assert all(r.entries_per_s > 0 for r in rows)
    assert list(rows[0].to_json()) == ["op", "batch", "entries", "rounds", "seconds", "entries_per_s"]


def test_main_writes_json_without_packets(tmp_path: Path):
    from innet.cli import main

    assert main(["bench", "p4runtime", "--skip-packets", "--write-rounds", "1", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "bench_p4runtime.json").read_text())
    assert result["machine"]["cores"] == os.cpu_count()
    assert {r["batch"] for r in result["writes"]} == {1, 1000} and "packets" not in result
