"""Mininet tier: ``innet bench --mtu 9000`` runs innet at K=2048 (chosen from the MTU) and
gloo on the same 9000-byte links, with exact results and wire bytes near the theory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from innet.testbed.backends.mininet.clean import innet_interfaces


@pytest.mark.slow
def test_jumbo_bench_picks_k_2048_for_innet_and_gloo(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "innet.cli", "bench", "--workers", "2", "--sizes", "64K",
                             "--mtu", "9000", "--repeats", "1", "--backend", "mininet", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (json_path,) = tmp_path.glob("bench-*.json")
    doc = json.loads(json_path.read_text())
    assert (doc["settings"]["k"], doc["settings"]["mtu"]) == (2048, 9000)
    rows = {r["collective"]: r for r in doc["rows"]}
    assert set(rows) == {"ina", "gloo"} and all(r["ok"] for r in rows.values())
    ina = rows["ina"]
    assert ina["wire_source"] == "h1-eth0"
    assert abs(ina["wire_up"] - ina["theory_wire"]) / ina["theory_wire"] < 0.25  # 32 frames of 8258 bytes
    # gloo's TCP segments grow with the MTU: far fewer bytes of headers than at 1500
    assert rows["gloo"]["wire_up"] < 1.05 * rows["gloo"]["theory_payload"] + 20000
    assert innet_interfaces(["s1"]) == []
