"""The user's commands on real BMv2 in Mininet (``--switch-impl bmv2``), short: ``innet demo``
and ``innet train`` on simple_switch_grpc (the switch as optimizer, exact; LuWu, like local
Adam), ``innet bench`` with innet and BMv2 rows in one run, and ``innet bench veth`` with a
simple_switch_grpc row. Skipped, naming the missing binary, when BMv2 is not installed
(``INNET_P4_PREFIX=/nonexistent`` makes it so here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from innet.testbed.backends.mininet.clean import innet_interfaces

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def bmv2(bmv2_tools: object) -> None:
    """Every test here needs BMv2 (skipped, naming what is missing, without it)."""


def _innet(*argv: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "innet.cli", *argv], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def _left_behind() -> list[str]:
    """The star's interfaces still there (the testbed checks its own switch process at teardown)."""
    return innet_interfaces(["s1"])


def _one(out: Path, pattern: str) -> dict:  # type: ignore[type-arg]
    (path,) = out.glob(pattern)
    doc: dict = json.loads(path.read_text())  # type: ignore[type-arg]
    return doc


@pytest.mark.parametrize("command", ["demo", "train"])
def test_switch_optimizer_on_simple_switch_grpc_is_exact(command: str, tmp_path: Path) -> None:
    extra = ["--sizes", "1K", "--no-gloo"] if command == "demo" else []
    _innet(command, "--switch-impl", "bmv2", "--workers", "2", "--steps", "3", "--out", str(tmp_path), *extra)
    doc = _one(tmp_path, f"{command}-*.json")
    assert doc["switch"].startswith("simple_switch_grpc")
    training = doc["training"]
    assert (training["steps"], training["workers_agree"], training["switch_registers_match"],
            training["bit_exact_with_model"]) == (3, True, True, True)
    if command == "demo":
        assert [(r["collective"], r["switch_impl"], r["elements"], r["ok"]) for r in doc["rows"]] == [
            ("ina", "bmv2", 1024, True)]
    assert _left_behind() == []


def test_luwu_on_simple_switch_grpc_trains_like_local_adam(tmp_path: Path) -> None:
    """``innet demo --mode luwu`` (``innet train --mode luwu`` is the same command function,
    ``cmd_demo``): exit 0 means no process failed and LuWu's accuracy is within 1 point of
    local Adam's."""
    _innet("demo", "--switch-impl", "bmv2", "--mode", "luwu", "--workers", "2", "--steps", "3", "--out", str(tmp_path))
    doc = _one(tmp_path, "demo-luwu-*.json")
    assert doc["switch"].startswith("simple_switch_grpc") and doc["k"] == 64 and doc["errors"] == {}
    assert len(doc["loss"]["luwu"]) == 3
    assert max(abs(a - b) for a, b in zip(doc["loss"]["luwu"], doc["loss"]["local"])) <= 2e-3
    assert [(n["name"], n["state"], n["step"]) for n in doc["nodes"]] == [("o1", "done", 3), ("o2", "done", 3)]
    assert doc["median_step_seconds"]["luwu"] > 0
    assert _left_behind() == []


def test_bench_puts_bmv2_rows_beside_innet_rows(tmp_path: Path) -> None:
    _innet("bench", "--switch-impl", "innet,bmv2", "--workers", "2", "--sizes", "1K", "--repeats", "1",
           "--skip", "gloo", "--out", str(tmp_path))
    doc = _one(tmp_path, "bench-*.json")
    assert [(r["switch_impl"], r["workers"], r["ok"]) for r in doc["rows"]] == [("innet", 2, True), ("bmv2", 2, True)]
    assert doc["switch_absent"] == {} and "simple_switch_grpc" in doc["switch"]
    assert _left_behind() == []


def test_bench_veth_measures_simple_switch_grpc_beside_innet_switch(tmp_path: Path) -> None:
    _innet("bench", "veth", "--seconds", "1", "--only", "agg64", "--switch-impl", "innet,bmv2", "--out", str(tmp_path))
    doc = json.loads((tmp_path / "bench_veth.json").read_text())
    assert [r["switch"] for r in doc["rows"]] == ["innet-switch", "simple_switch_grpc"]
    assert all(r["switch_pps"] > 0 and r["ceiling_pps"] > 0 for r in doc["rows"])
    assert "ibvo" not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
