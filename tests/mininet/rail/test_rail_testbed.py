"""Mininet tier: rail-only and rail-optimized with 2 domains x 4 GPUs (x 2 on loopback); hierarchical INA
exact, the switch optimizer bit-exact with the numpy model, flat INA through the spine, the
all-to-all delivering every byte, gloo's ring (relayed through the HB domain on rail-only),
digits training on the rail switches, a spare HB domain taking over a dead one mid-training
bit for bit, and nothing left behind (HB bridges live in their own namespaces)."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.rail import workloads
from innet.testbed.rail.testbed import RailTestbed
from innet.testbed.core.topology import Link, rail_only, rail_optimized
from innet.testbed.rail.digits import DigitsConfig
from innet.testbed.rail.spare import run_digits_failover

from testkit.rail_checks import assert_digits_trained, assert_exact, assert_training_bit_exact  # noqa: E402

NIC = Link(bw_mbps=100)
HB = Link(bw_mbps=1000)


def _leftovers(names: list[str]) -> list[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if any(f" {n}-eth" in line or f" {n}:" in line for n in names)]


def _options(tmp_path: Path) -> TestbedOptions:
    return TestbedOptions(state_dir=tmp_path, window=8)


@pytest.mark.slow
def test_rail_only_collectives_and_training(tmp_path: Path) -> None:
    """One bring-up for everything rail-only does, at 4 GPUs per domain (2 per domain runs on
    loopback): hierarchical INA exact, the momentum optimizer bit-exact with the numpy model,
    the all-to-all, gloo's ring relayed through the HB domain (no NIC path between rails: the
    hosts' relay routes go via the HB peer), and digits trained on the rail switches."""
    gpus = 4
    topo = rail_only(2, gpus, nic_link=NIC, hb_link=HB)
    with RailTestbed(topo, _options(tmp_path), backend="mininet") as tb:
        assert_exact(workloads.hierarchical(tb, [1, 300, 2000]), [1, 300, 2000], 2 * gpus)
        assert_training_bit_exact(tb, "momentum", steps=2)
        assert_exact(workloads.alltoall(tb, 20000, repeats=1), [20000], 2 * gpus)
        assert "via 10.1.1.2 dev d1g1-eth1" in tb.network.net.get("d1g1").cmd(f"ip route get {topo.host('d2g2').address}")
        assert_exact(tb.run_gloo([1000, 20000], repeats=1, timeout=50), [1000, 20000], 2 * gpus)
        assert_digits_trained(tb, steps=12)
    assert _leftovers([s.name for s in topo.switches]) == []


@pytest.mark.slow
def test_rail_optimized_collectives_and_training(tmp_path: Path) -> None:
    """One bring-up for everything rail-optimized does, at 4 GPUs per domain: hierarchical and
    flat (through the spine) INA exact, SGD bit-exact with the numpy model, the all-to-all on
    both routes (direct through the spine; two-step: HB forwarding, then the rail), gloo's ring
    through the spine and digits trained on the rail switches; all of it with small frames first
    on every shaped link (both ends: host NIC, switch port, HB)."""
    gpus = 4
    topo = rail_optimized(2, gpus, nic_link=NIC, hb_link=HB)
    with RailTestbed(topo, replace(_options(tmp_path), small_frames_first=True), backend="mininet") as tb:
        host = tb.network.net.get("d1g1")
        for run, iface in ((host.cmd, "d1g1-eth0"), (host.cmd, "d1g1-eth1"),
                           (lambda c: subprocess.run(c, shell=True, capture_output=True, text=True).stdout,
                            tb.network.switch_iface("d1g1"))):
            classes = run(f"tc class show dev {iface}")
            assert "class htb 5:10 parent 5:1 prio 0" in classes and "class htb 5:20 parent 5:1 prio 1" in classes, \
                (iface, classes)
        assert_exact(workloads.hierarchical(tb, [300, 2000]), [300, 2000], 2 * gpus)
        assert_exact(workloads.flat(tb, [300]), [300], 2 * gpus)
        assert_training_bit_exact(tb, "sgd", steps=2)
        for route in ("direct", "two-step"):
            assert_exact(workloads.alltoall(tb, 20000, repeats=1, route=route), [20000], 2 * gpus)
        assert_exact(tb.run_gloo([1000, 20000], repeats=1, timeout=50), [1000, 20000], 2 * gpus)
        assert_digits_trained(tb, steps=12)
        sent = host.cmd("tc -s class show dev d1g1-eth0")
        small = re.search(r"class htb 5:10 .*?\n Sent (\d+) bytes (\d+) pkt", sent)
        large = re.search(r"class htb 5:20 .*?\n Sent (\d+) bytes (\d+) pkt", sent)
        assert small and large, sent
        assert int(small[2]) > 0 and int(small[1]) <= 128 * int(small[2]), sent  # only small frames took 5:10
        assert int(large[1]) > 128 * int(large[2]), sent
    assert _leftovers([s.name for s in topo.switches]) == []


@pytest.mark.slow
def test_a_nic_link_down_fails_its_rail_and_a_reinstalled_job_runs(tmp_path: Path) -> None:
    """d1g2's NIC link goes down mid-job: both GPUs of rail r2 fail within the chunk deadline
    naming their rail switch; link up, re-install, exact. Rail r1 may keep half-finished copies
    of the failed set (its GPUs stop when their HB peers leave, with up to a window of chunks
    in flight: a timing race); they belong to that set's epoch, so the next worker set can never
    see them."""
    import time

    from innet.testbed.core.ina_worker import EXIT_AGGREGATION

    topo = rail_only(2, 2, nic_link=NIC, hb_link=HB)
    with RailTestbed(topo, TestbedOptions(state_dir=tmp_path, window=8, chunk_deadline=2.0), backend="mininet") as tb:
        procs = tb.spawn_rail("allreduce", sizes=(4000,), repeats=200)
        deadline = time.monotonic() + 30
        while tb.rail_counters("r2")["innet_completions"] <= 20:
            assert time.monotonic() < deadline, "rail r2 did not aggregate"
            time.sleep(0.05)
        tb.set_nic_link("d1g2", up=False)
        down = time.monotonic()
        logs = {}
        for name, popen in procs:
            popen.wait(timeout=20)
            logs[name] = (popen.returncode, tb.procs.log_tail(name))
            tb.procs.forget(name)
        assert time.monotonic() - down < 12
        for host in ("d1g2", "d2g2"):
            code, log = logs[f"rail-{host}"]
            assert code == EXIT_AGGREGATION and "rail switch r2 (10.0.0.253): aggregation failed" in log, log
        # At most the chunks r1's GPUs had in flight when they stopped: one window each.
        assert tb.controller["r1"].occupancy(tb.job.job_id).busy <= 2 * tb.options.window
        tb.set_nic_link("d1g2", up=True)
        tb.replace_job()
        assert_exact(workloads.hierarchical(tb, [1000]), [1000], 4)


@pytest.mark.slow
def test_testbed_up_rail_only_every_gpu_reaches_every_gpu() -> None:
    """`innet testbed up --topo rail-only`: the Mininet CLI's pingall reaches every GPU, the
    ones off a host's rail through its HB peer (the relay routes), the others on the rail."""
    commands = "pingall\nd1g1 ip route get 10.0.0.4\nd1g1 ip route get 10.0.0.3\nexit\n"
    proc = subprocess.run([sys.executable, "-m", "innet.cli", "testbed", "up", "--topo", "rail-only", "--domains", "2",
                           "--gpus-per-domain", "2", "--bw", "100", "--hb-bw", "1000"],
                          input=commands, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=55,
                          cwd=Path(__file__).resolve().parents[3])
    out = proc.stdout
    assert proc.returncode == 0, out
    assert "*** Results: 0% dropped (12/12 received)" in out, out
    assert "10.0.0.4 via 10.1.1.2 dev d1g1-eth1 src 10.0.0.1" in out, out  # d2g2: relayed by d1g2
    assert "10.0.0.3 dev d1g1-eth0" in out, out  # d2g1: on rail r1


@pytest.mark.slow
def test_a_spare_domain_takes_over_a_dead_one_bit_exact(tmp_path: Path) -> None:
    topo = rail_only(3, 2, nic_link=NIC, hb_link=HB)
    options = TestbedOptions(state_dir=tmp_path, window=8, chunk_deadline=60.0)
    with RailTestbed(topo, options, backend="mininet", spares=1) as tb:
        # Rail 0 completes 6-11 chunks per step, so the 20th completion comes by step 4 of 60. The
        # kill follows a counter read over P4Runtime, which a loaded machine can delay by seconds
        # while the training goes on: with 8 steps, and once on a loaded CI machine with 30, the
        # run ended first (a named FailoverError, not a wrong take-over)
        config = DigitsConfig(gpus=tb.gpus, steps=60)
        plain = workloads.digits(tb, config)
        out = run_digits_failover(tb, config, rank=0, kill_at=20, warm=True)
        assert (out.failover.failed_domain, out.failover.spare_domain) == (0, 2)
        assert sorted(out.run.finals) == [0, 1, 2, 3]
        for rank, params in out.run.finals.items():
            assert np.array_equal(params, plain.finals[0]), f"rank {rank} differs from the uninterrupted run"
    assert _leftovers([s.name for s in topo.switches]) == []
