"""Mininet tier: the star testbed with InnetSwitch, exact sums (clean and 5% netem loss),
gloo through the same switch, teardown and crash cleanup leave nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from innet.testbed.bringup import TestbedOptions
from innet.testbed.cleanup import cleanup, innet_interfaces
from innet.testbed.impair import netem_available
from innet.testbed.mininet_net import MininetTestbed
from innet.testbed.processes import alive, find_marked, read_records
from innet.testbed.topology import Link, star

SWITCH_MODULE = b"innet.switch.cli.switch"


def _switch_processes() -> list[int]:
    """innet-switch processes whose command line names an ``s1-eth`` interface (Mininet ones)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if SWITCH_MODULE in cmdline and b"s1-eth" in cmdline:
                out.append(int(entry.name))
    return out


def _assert_nothing_left(run_dir: Path) -> None:
    assert innet_interfaces(["s1"]) == []
    assert find_marked(only_run=str(run_dir)) == []
    assert _switch_processes() == []


def test_star_4_workers_exact_sums_and_clean_teardown(tmp_path: Path) -> None:
    with MininetTestbed(star(workers=4, link=Link(bw_mbps=1000)), TestbedOptions(state_dir=tmp_path)) as tb:
        run_dir = tb.procs.dir
        assert innet_interfaces(["s1"]) == ["s1-eth1", "s1-eth2", "s1-eth3", "s1-eth4"]
        assert "ttl" in tb.net.get("h1").cmd("ping -c1 -W2 10.0.0.4")  # routes + proxy ARP in innet.p4
        results = tb.run_ina([1, 1000, 20000], repeats=1, exact=True, timeout=240)
        assert all(r.ok for per_rank in results for r in per_rank)
        assert all(r.wire_source == f"h{r.rank + 1}-eth0" for per_rank in results for r in per_rank)
        counters = tb.counters()
        assert counters["innet_contributions"] == 4 * counters["innet_completions"]
        assert counters["innet_drops"] == 0
        sent, received = zip(*(tb.wire_bytes() or {}).values())
        assert min(sent) > 20000 * 4 * 2  # two operations of 80 kB each, plus headers
    _assert_nothing_left(run_dir)


def test_exact_sums_with_5_percent_netem_loss(tmp_path: Path) -> None:
    with MininetTestbed(star(workers=4, link=Link(loss_pct=5)), TestbedOptions(state_dir=tmp_path)) as tb:
        qdiscs = tb.net.get("h2").cmd("tc qdisc show dev h2-eth0; tc filter show dev h2-eth0 egress")
        assert "loss 5%" in qdiscs if netem_available() else "bytecode" in qdiscs, qdiscs
        results = tb.run_ina([5000], repeats=1, exact=True, timeout=240)
        assert all(r.ok for per_rank in results for r in per_rank)
        assert sum(r.stats["retransmitted"] for per_rank in results for r in per_rank) > 0
        counters = tb.counters()
        assert counters["innet_duplicates"] > 0  # retransmissions answered, never double-counted
        run_dir = tb.procs.dir
    _assert_nothing_left(run_dir)


def test_gloo_through_the_switch(tmp_path: Path) -> None:
    with MininetTestbed(star(workers=2, link=Link(bw_mbps=100)), TestbedOptions(state_dir=tmp_path)) as tb:
        results = tb.run_gloo([1024, 100000], repeats=1, timeout=240)
        assert all(r.ok for per_rank in results for r in per_rank)
        # Ring of 2: each worker sends half of 400 kB twice = 400 kB, plus TCP/IP headers.
        big = [per_rank[1] for per_rank in results]
        assert all(r.wire is not None and 400_000 < r.wire["tx_bytes"] < 480_000 for r in big)
        run_dir = tb.procs.dir
    _assert_nothing_left(run_dir)


CRASHER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from innet.testbed.bringup import TestbedOptions
    from innet.testbed.mininet_net import MininetTestbed
    from innet.testbed.topology import star
    tb = MininetTestbed(star(workers=3), TestbedOptions(state_dir=Path(sys.argv[1]))).start()
    tb.spawn_on("h2", "sleeper", [sys.executable, "-c", "import time; time.sleep(600)"])
    print("up", flush=True)
    time.sleep(600)
""")


def test_cleanup_after_a_killed_bring_up(tmp_path: Path) -> None:
    """SIGKILL the owner of a live Mininet testbed, then cleanup(): no interfaces, switch or workers left."""
    owner = subprocess.Popen([sys.executable, "-c", CRASHER, str(tmp_path)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert owner.stdout is not None and owner.stderr is not None
        line = owner.stdout.readline()
        assert line.strip() == b"up", owner.stderr.read().decode()[-3000:]
        assert innet_interfaces(["s1"]) == ["s1-eth1", "s1-eth2", "s1-eth3"]
        assert len(_switch_processes()) == 1
        (run_dir,) = tmp_path.iterdir()
        shells = [r for r in read_records(run_dir) if r.name.startswith("mnhost-")]
        assert len(shells) == 3 and all(alive(r) for r in shells)
        os.killpg(owner.pid, signal.SIGKILL)
        owner.wait(timeout=10)
        assert innet_interfaces(["s1"]) != []  # the crash left them
        done = cleanup(tmp_path)
        assert any("sleeper" in d for d in done), done
        assert any("innet-switch s1" in d for d in done), done
        deadline = time.monotonic() + 20
        while _switch_processes() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert innet_interfaces(["s1"]) == []
        assert _switch_processes() == []
        assert not any(Path(run).parent == tmp_path for _, run in find_marked())
        assert list(tmp_path.iterdir()) == []
        assert not any(alive(r) for r in shells)  # host shells end with their stdin or by cleanup
    finally:
        if owner.poll() is None:
            os.killpg(owner.pid, signal.SIGKILL)
            owner.wait(timeout=10)
        cleanup(tmp_path)
