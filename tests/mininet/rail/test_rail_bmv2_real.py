"""Rail topologies on real BMv2 (``--switch-impl bmv2``), tiny (BMv2 forwards ~300-1,700
packets/s here): every rail switch and the spine a simple_switch_grpc with its own device id,
gRPC and Thrift ports; ``innet train --topo rail-only`` bit-exact with the numpy model;
hierarchical and flat INA exact; and nothing left behind (no simple_switch_grpc, interface or
Mininet host) after a run or after a failure inside one. Skipped, naming the missing binary,
without BMv2 (``INNET_P4_PREFIX=/nonexistent`` makes it so here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from innet.testbed.backends.mininet.clean import innet_interfaces
from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.core.topology import Topology, rail_only, rail_optimized
from innet.testbed.rail import workloads
from innet.testbed.rail.testbed import RailTestbed

from testkit.rail_checks import assert_exact  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def bmv2(bmv2_tools: object) -> None:
    """Every test here needs BMv2 (skipped, naming what is missing, without it)."""


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    out = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out[int(proc.name)] = (ppid, cmdline)
    return out


def _left_behind(topo: Topology, before: dict[int, tuple[int, str]]) -> list[str]:
    """This run's leftovers: processes started since ``before``, still running, that are this
    test's children or orphans (another test run on this machine, with the same names, has
    its own live parent): a simple_switch_grpc on the topology's interfaces or a Mininet host shell of
    its hosts; and, when no other run holds them, the switches' interfaces."""
    names = [s.name for s in topo.switches]
    marks = [f"@{n}-eth" for n in names] + [f"mininet:{h.name} " for h in topo.hosts]
    found = []
    others = False
    for pid, (ppid, cmdline) in _processes().items():
        if pid in before or not any(m in cmdline + " " for m in marks):
            continue
        if ppid in (os.getpid(), 1):
            found.append(f"pid {pid}: {cmdline[:120]}")
        else:
            others = True
    return found if others else found + innet_interfaces(names)


def test_train_rail_only_on_simple_switch_grpc_is_bit_exact(tmp_path: Path) -> None:
    before = _processes()
    done = subprocess.run([sys.executable, "-m", "innet.cli", "train", "--topo", "rail-only", "--switch-impl", "bmv2",
                           "--domains", "2", "--gpus-per-domain", "2", "--steps", "2", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (path,) = tmp_path.glob("rail-train-rail-only-*.json")
    doc = json.loads(path.read_text())
    assert (doc["backend"], doc["switch_impl"], doc["topology"]) == ("mininet", "bmv2", "rail-only-2x2")
    t = doc["training"]
    assert (t["steps"], t["gpus"], t["workers_agree"], t["switch_registers_match"], t["bit_exact_with_model"]) == (
        2, 4, True, True, True)
    assert set(t["shards"]) == {"r1", "r2"} and all(n > 0 for n in t["shards"].values())
    assert _left_behind(rail_only(domains=2, gpus_per_domain=2), before) == []


def test_rail_optimized_switches_are_separate_bmv2_and_a_failure_leaves_nothing(tmp_path: Path) -> None:
    topo = rail_optimized(domains=2, gpus_per_domain=2)
    before = _processes()
    options = TestbedOptions(state_dir=tmp_path, window=8, switch_impl="bmv2")
    with pytest.raises(RuntimeError, match="failure inside the run"):
        with RailTestbed(topo, options, backend="mininet") as tb:
            switches = [s.name for s in topo.p4_switches]
            assert sorted(tb.grpc_addresses) == sorted(switches) == sorted(tb.network.thrift_ports)
            assert len(set(tb.grpc_addresses.values())) == len(switches)
            assert len(set(tb.network.thrift_ports.values())) == len(switches)
            running = _processes()
            for s in topo.p4_switches:  # one simple_switch_grpc per switch, with its own identity
                (cmd,) = [c for pid, (ppid, c) in running.items()
                          if ppid == os.getpid() and f"@{s.name}-eth" in c]
                assert "simple_switch_grpc" in cmd
                assert f"--device-id {s.device_id} " in cmd
                assert f"--thrift-port {tb.network.thrift_ports[s.name]} " in cmd
                assert f"--grpc-server-addr {tb.grpc_addresses[s.name]} " in cmd + " "
            assert len({s.device_id for s in topo.p4_switches}) == len(switches)
            assert_exact(workloads.hierarchical(tb, [300]), [300], 4)
            assert_exact(workloads.flat(tb, [300]), [300], 4)
            raise RuntimeError("failure inside the run")
    assert _left_behind(topo, before) == []
