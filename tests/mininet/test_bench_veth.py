"""Mininet tier (root): ``innet bench veth`` measures the reflector ceilings (recvmmsg and RX ring)
and innet-switch on a veth pair it makes, saves JSON and PNG, and leaves no namespace or interface behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

INNET = [sys.executable, "-m", "innet.cli"]


def test_bench_veth_agg64_writes_ratio_and_cleans_up(tmp_path: Path) -> None:
    done = subprocess.run([*INNET, "bench", "veth", "--seconds", "1", "--only", "agg64", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    doc = json.loads((tmp_path / "bench_veth.json").read_text())
    (row,) = doc["rows"]
    assert row["workload"] == "agg64" and row["ceiling_pps"] > 0 and 0 < row["ratio"]
    # the ring reflector was measured in the same round, and the switch's ratio to it is its own
    assert row["ring_ceiling_pps"] > 0 and row["ring_ratio"] == round(row["switch_pps"] / row["ring_ceiling_pps"], 3)
    devices = [p["device"] for p in doc["points"]]
    assert devices == ["reflector", "ring reflector", "innet-switch"]
    assert (tmp_path / "bench_veth.png").read_bytes()[:4] == b"\x89PNG"
    assert "innet-bv" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "ibvo" not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout


def test_bench_veth_without_bmv2_says_so_and_measures_innet(tmp_path: Path) -> None:
    """``--switch-impl innet,bmv2`` where BMv2 is not installed: one line saying the BMv2 rows
    are left out and why; the innet-switch row is measured and the JSON records the absence."""
    import os

    path = ":".join(p for p in os.environ.get("PATH", "").split(":") if "p4tools" not in p)
    env = {**os.environ, "INNET_P4_PREFIX": "/nonexistent", "PATH": path}
    env.pop("INNET_BMV2_BIN", None)
    done = subprocess.run([*INNET, "bench", "veth", "--seconds", "1", "--only", "agg64", "--switch-impl", "innet,bmv2",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "innet bench veth: no simple_switch_grpc rows: bmv2 backend: simple_switch_grpc not found" in done.stderr
    doc = json.loads((tmp_path / "bench_veth.json").read_text())
    assert [r["switch"] for r in doc["rows"]] == ["innet-switch"]
    assert doc["switch_absent"]["bmv2"].startswith("bmv2 backend: simple_switch_grpc not found")
