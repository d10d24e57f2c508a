"""Mininet tier: ``innet bench`` with tiny sizes produces JSON and PNG naming the settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from innet.testbed.backends.mininet.clean import innet_interfaces


def test_bench_smoke_writes_json_and_png(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "innet.cli", "bench", "--workers", "2", "--sizes", "64,1K",
                             "--loss", "0,5", "--repeats", "1", "--backend", "mininet", "--out", str(tmp_path),
                             "--markdown"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (json_path,) = tmp_path.glob("bench-*.json")
    (png_path,) = tmp_path.glob("bench-*.png")
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(json_path.read_text())
    assert doc["backend"] == "mininet" and doc["settings"]["k"] == 256  # K from the default MTU 1500
    assert doc["settings"]["mtu"] == 1500
    rows = doc["rows"]
    assert {(r["collective"], r["elements"], r["loss_pct"]) for r in rows} == {
        (c, s, p) for c in ("ina", "gloo") for s in (64, 1024) for p in (0.0, 5.0)}
    assert all(r["ok"] for r in rows)
    for r in rows:  # bytes measured on the hosts' interfaces, next to the theory
        assert r["wire_source"] == "h1-eth0" and r["wire_up"] > 0 and r["theory_wire"] > 0
    ina = [r for r in rows if r["collective"] == "ina" and r["loss_pct"] == 0 and r["elements"] == 1024]
    assert abs(ina[0]["wire_up"] - ina[0]["theory_wire"]) / ina[0]["theory_wire"] < 0.25
    for r in rows:  # innet: chunks resent per timed operation (both workers); gloo: not measured
        if r["collective"] == "ina":
            assert isinstance(r["retransmitted"], (int, float)) and r["retransmitted"] >= 0, r
        else:
            assert r["retransmitted"] is None, r
    assert "| ina | innet | 2 | 1K | 0% |" in result.stdout  # collective, switch, workers, size, loss
    assert "| recv/worker | retrans/op | exact |" in result.stdout
    assert innet_interfaces(["s1"]) == []
