"""``innet bench cluster``'s plumbing on the 3-node lab at a small N: the image pushed, one
deployment of timed allreduces, every rank exact, per-operation times and interface bytes
read back, DDP + gloo and LuWu trained for a step past the warm-up with their step times and
overlay bytes, the stack removed; and the command's refusal of bad options (no lab needed).
Timings are printed, never asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(900)


def test_cluster_side_of_the_bench_at_two_workers(swarm_lab: Any, tmp_path: Path) -> None:
    from innet.testbed.cluster import bench

    if not swarm_lab.torch:
        pytest.skip("torch is not installed on the host: no torch image for gloo's side")
    config = bench.ClusterBenchConfig(workers=(2,), elements=2048, repeats=3, mininet=False, out_dir=tmp_path,
                                      deadline=300, luwu_steps=1, luwu_workers=(2,))
    doc = bench.run(config, progress=print, lab=swarm_lab).to_json()
    print(bench.table(doc))
    ina, gloo, ddp, luwu = doc["rows"]
    assert (ina["where"], ina["workload"], ina["workers"], ina["ok"], ina["k"]) == ("cluster", "ina", 2, True, 256)
    assert (gloo["where"], gloo["workload"], gloo["workers"], gloo["ok"]) == ("cluster", "gloo", 2, True)
    # 2048 int32 at K=256: 8 packets of 1,090 bytes a worker sends per operation at least (resends may add)
    assert ina["tx_packets"] >= 8 and ina["wire_up_bytes"] >= 8 * 1090
    # gloo's ring at N=2 sends half the message each way at least: 4 kB of 8 kB
    assert gloo["wire_up_bytes"] >= 4096
    for row in (ina, gloo):
        assert row["underlay_up_bytes"] == row["wire_up_bytes"] + 50 * row["tx_packets"]
    assert [(d["workload"], d["workers"]) for d in doc["deployment"]["deployments"]] == [
        ("ina", 2), ("gloo", 2), ("ddp-gloo", 2), ("luwu (one job)", 2)]
    assert all(d["first_step_s"] > 0 for d in doc["deployment"]["deployments"][:2])
    for row in (ddp, luwu):  # trained on the two nodes without the switch; one timed step
        assert row["ok"] and row["step_s"] > 0 and row["detail"]["timed_steps"] == 1, row
        assert set(row["nodes"]) <= {"innet-n2", "innet-n3"}
        assert row["underlay_up_bytes"] == pytest.approx(row["wire_up_bytes"] + 50 * row["tx_packets"])
    # the 64-128-64-10 MLP's gradient is 69 kB: a ring at N=2 sends it once, LuWu pushes all of it
    params = ddp["detail"]["params"]
    assert ddp["wire_up_bytes"] >= 2 * params and luwu["wire_up_bytes"] >= 4 * params
    assert doc["not_measured"] == {} and doc["partial"] is False
    assert swarm_lab.wait_clean() == []
    saved = bench.save(doc, tmp_path)
    assert saved.exists() and "cluster" in saved.read_text()


@pytest.mark.parametrize("argv, message", [
    (["--workers", "9"], "workers=(9,): each within 2..8"),
    (["--repeats", "1"], "repeats=1: must be >= 2"),
    (["--workers", "four"], "'four': expected comma-separated integers"),
])
def test_bad_options_are_one_line(argv: list[str], message: str) -> None:
    out = subprocess.run([sys.executable, "-m", "innet.cli", "bench", "cluster", *argv], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
