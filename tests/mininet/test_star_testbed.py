"""Mininet tier: the star testbed with InnetSwitchNode, exact sums on random integers for 2, 4 and
8 workers (clean links; 5% random drop by cls_bpf; 5% drop plus 5% duplication by cls_bpf +
mirred), gloo through the same switch, teardown and crash cleanup leave nothing behind.

This kernel has no ``sch_netem``: link loss and duplication are tc ``cls_bpf`` programs on a
``clsact`` qdisc of each host interface (``innet.testbed.backends.mininet.impair``); the tests that need them
are skipped, naming the missing kernel option, where the kernel lacks them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from innet.testbed.core.testbed import Testbed, TestbedOptions, WorkerResult
from innet.testbed.backends.mininet.clean import cleanup, innet_interfaces
from innet.testbed.backends.mininet.impair import cls_bpf_available, duplication_available
from innet.testbed.backends.select import open_testbed
from innet.testbed.core.processes import alive, find_marked, read_records
from innet.testbed.core.topology import Link, star

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


def _assert_exact(results: list[list[WorkerResult]], workers: int, sizes: list[int]) -> None:
    """One result per rank and size, each compared element by element (``exact``) in the worker."""
    assert [[(r.rank, r.elements) for r in per_rank] for per_rank in results] == [
        [(rank, size) for size in sizes] for rank in range(workers)]
    assert all(r.ok for per_rank in results for r in per_rank), [
        (r.rank, r.elements) for per_rank in results for r in per_rank if not r.ok]


def _mirred_copies(tb: Testbed, host: str, hook: str) -> int:
    """Frames the duplication filter's mirred action cloned on ``host``'s interface at ``hook``."""
    out = tb.network.net.get(host).cmd(f"tc -s filter show dev {host}-eth0 {hook}")
    match = re.search(r"mirred \((?:Ingress|Egress) Mirror to device \S+\).*?Sent \d+ bytes (\d+) pkt", out, re.S)
    assert match, out
    return int(match.group(1))


def _require_cls_bpf() -> None:
    if not cls_bpf_available():
        pytest.skip("the kernel lacks clsact or cls_bpf (CONFIG_NET_SCH_INGRESS, CONFIG_NET_CLS_BPF): "
                    "no random drop without netem")


@pytest.mark.parametrize("workers", [2, 4, 8])
def test_star_exact_sums_and_clean_teardown(tmp_path: Path, workers: int) -> None:
    sizes = [1, 1000, 20000]
    with open_testbed(star(workers=workers, link=Link(bw_mbps=1000)), TestbedOptions(state_dir=tmp_path), backend="mininet") as tb:
        run_dir = tb.procs.dir
        assert innet_interfaces(["s1"]) == [f"s1-eth{i}" for i in range(1, workers + 1)]
        # routes + proxy ARP in innet.p4
        assert "ttl" in tb.network.net.get("h1").cmd(f"ping -c1 -W2 10.0.0.{workers}")
        results = tb.run_ina(sizes, repeats=1, exact=True, timeout=240)
        _assert_exact(results, workers, sizes)
        assert all(r.wire_source == f"h{r.rank + 1}-eth0" for per_rank in results for r in per_rank)
        counters = tb.counters()
        # 1, 16 and 313 chunks, two operations each (warm-up + timed), a one-chunk barrier
        # before and after each operation, and one at start.
        assert counters["innet_completions"] == 2 * (1 + 16 + 313) + 3 * 2 * 2 + 1
        assert counters["innet_contributions"] == workers * counters["innet_completions"]
        assert counters["innet_drops"] == 0
        sent, received = zip(*(tb.wire_bytes() or {}).values())
        assert min(sent) > 20000 * 4 * 2  # two operations of 80 kB each, plus headers
    _assert_nothing_left(run_dir)


@pytest.mark.parametrize("workers", [4, 8])
def test_exact_sums_with_5_percent_bpf_random_drop(tmp_path: Path, workers: int) -> None:
    """5% of frames dropped each way on every host link by the cls_bpf random drop (forced even
    where the kernel has netem, which this one has not)."""
    _require_cls_bpf()
    options = TestbedOptions(state_dir=tmp_path, link_loss_bpf=True)
    with open_testbed(star(workers=workers, link=Link(loss_pct=5)), options, backend="mininet") as tb:
        for hook in ("ingress", "egress"):
            filters = tb.network.net.get("h2").cmd(f"tc filter show dev h2-eth0 {hook}")
            assert "direct-action" in filters and "bytecode" in filters and "mirred" not in filters, filters
        results = tb.run_ina([5000], repeats=1, exact=True, timeout=240)
        _assert_exact(results, workers, [5000])
        assert sum(r.stats["retransmitted"] for per_rank in results for r in per_rank) > 0
        counters = tb.counters()
        assert counters["innet_duplicates"] > 0  # retransmissions answered, never double-counted
        assert counters["innet_contributions"] == workers * counters["innet_completions"]
        run_dir = tb.procs.dir
    _assert_nothing_left(run_dir)


@pytest.mark.parametrize("loss", [0, 5], ids=["dup-only", "drop-and-dup"])
def test_exact_sums_with_5_percent_duplication(tmp_path: Path, loss: int) -> None:
    """Every host link duplicates 5% of frames each way (cls_bpf + mirred), and drops ``loss``%
    (cls_bpf): each contribution still counts once (a copy is recognised by the slot bitmap)."""
    _require_cls_bpf()
    if not duplication_available():
        pytest.skip("the kernel lacks mirred (CONFIG_NET_ACT_MIRRED): no link duplication")
    workers = 4
    options = TestbedOptions(state_dir=tmp_path, link_loss_bpf=True, link_dup_pct=5)
    with open_testbed(star(workers=workers, link=Link(loss_pct=loss or None)), options, backend="mininet") as tb:
        results = tb.run_ina([5000], repeats=1, exact=True, timeout=240)
        _assert_exact(results, workers, [5000])
        counters = tb.counters()
        assert counters["innet_contributions"] == workers * counters["innet_completions"]
        copies = {(h.name, hook): _mirred_copies(tb, h.name, hook)
                  for h in tb.topology.workers for hook in ("ingress", "egress")}
        assert all(n > 0 for n in copies.values()), copies  # duplicated both ways on every link
        retransmitted = sum(r.stats["retransmitted"] for per_rank in results for r in per_rank)
        if loss:
            assert counters["innet_duplicates"] > 0
        else:
            # Without loss every retransmission reaches the switch as a duplicate, and so does
            # every wire copy of a CONTRIB (egress copies also include a few ARP frames).
            egress = sum(n for (_, hook), n in copies.items() if hook == "egress")
            assert retransmitted < counters["innet_duplicates"] <= retransmitted + egress, (counters, copies)
        run_dir = tb.procs.dir
    _assert_nothing_left(run_dir)


def test_gloo_through_the_switch(tmp_path: Path) -> None:
    with open_testbed(star(workers=2, link=Link(bw_mbps=100)), TestbedOptions(state_dir=tmp_path), backend="mininet") as tb:
        results = tb.run_gloo([1024, 100000], repeats=1, timeout=240)
        assert all(r.ok for per_rank in results for r in per_rank)
        # Ring of 2: each worker sends half of 400 kB twice = 400 kB, plus TCP/IP headers.
        big = [per_rank[1] for per_rank in results]
        assert all(r.wire is not None and 400_000 < r.wire["tx_bytes"] < 480_000 for r in big)
        run_dir = tb.procs.dir
    _assert_nothing_left(run_dir)


CRASHER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from innet.testbed.core.testbed import Testbed, TestbedOptions, WorkerResult
    from innet.testbed.backends.select import open_testbed
    from innet.testbed.core.topology import star
    tb = open_testbed(star(workers=3), TestbedOptions(state_dir=Path(sys.argv[1])), backend="mininet").start()
    sleeper = tb.spawn_on("h2", "sleeper", [sys.executable, "-c", "import time; time.sleep(600)"])
    # mnexec leaves this process's session after its exec: until then a kill of this process
    # group would take the sleeper along, and cleanup would find nothing to end.
    deadline = time.monotonic() + 60  # generous: on a loaded machine the exec can take seconds
    while os.getsid(sleeper.pid) != sleeper.pid and time.monotonic() < deadline:
        time.sleep(0.01)
    print("up" if os.getsid(sleeper.pid) == sleeper.pid else "sleeper still in our session", flush=True)
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
        assert any("leftover switch s1" in d for d in done), done
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
