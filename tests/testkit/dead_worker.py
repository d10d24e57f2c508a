"""The dead-worker scenario, shared by the loopback tier
(tests/integration/test_loopback_dead_worker.py) and the Mininet tier
(tests/mininet/test_star_dead_worker.py): a worker dies (SIGKILL of its worker process
mid-job, whose agent process must then stop on its own, or it never starts); every other
worker fails within its chunk deadline naming the dead rank; destroying the job leaves its
slot range, counters and table entries clean; a new job of the survivors on the same slots
sums exactly."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from innet.controller.inspect import inspect_switch
from innet.controller.jobs import WORKERS_TABLE
from innet.testbed.core.testbed import Testbed
from innet.testbed.core.ina_worker import EXIT_AGGREGATION

DEADLINE = 3.0
"""The agents' chunk deadline (seconds)."""
SLACK = 4.0
"""What a survivor may take beyond the deadline to notice, report and exit (loaded 2-core machine)."""
STARTUP = 15.0
"""Never-started case: the clock starts at spawn, so the survivors' own start-up counts too."""
WINDOW = 16
SIZE = 200_000
"""Elements per allreduce: ~3k chunks, a few seconds per operation, so a kill lands mid-job."""
DEAD = 2
"""Rank (host h3) that dies."""


AGENT_EXIT = 2.0
"""Seconds a killed worker's agent may take to exit (well under 0.1 s when idle; the loaded
machine and Mininet hosts get slack); it must stop long before the chunk deadline."""


def _agent_processes(pid: int) -> list[int]:
    """Process ids of the multiprocessing children of ``pid`` (its agent; not its resource
    tracker), from /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"spawn_main" in cmdline:
                out.append(int(entry.name))
    return out


def _running(pid: int) -> bool:
    """``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_exits(procs: dict[str, subprocess.Popen[bytes]], since: float, timeout: float) -> dict[str, float]:
    """Seconds from ``since`` until each process exited (polled every 20 ms)."""
    out: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(out) < len(procs) and time.monotonic() < deadline:
        for name, popen in procs.items():
            if name not in out and popen.poll() is not None:
                out[name] = time.monotonic() - since
        time.sleep(0.02)
    assert len(out) == len(procs), f"still running after {timeout:g} s: {sorted(set(procs) - set(out))}"
    return out


def _wait_mid_job(tb: Testbed, procs: dict[str, subprocess.Popen[bytes]], completions: int,
                  timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while tb.counters()["innet_completions"] < completions:
        assert all(p.poll() is None for p in procs.values()), {n: p.poll() for n, p in procs.items()}
        assert time.monotonic() < deadline, f"fewer than {completions} completions after {timeout:g} s"
        time.sleep(0.05)


def _assert_survivors_name(tb: Testbed, survivors: dict[str, subprocess.Popen[bytes]],
                           elapsed: dict[str, float], dead: int, bound: float) -> None:
    for name, popen in survivors.items():
        log = tb.procs.log_path(name).read_text(errors="replace")
        assert popen.returncode == EXIT_AGGREGATION, (popen.returncode, log[-2000:])
        match = re.search(r"ina_worker rank (\d+): aggregation failed: job (\d+), worker \d+: chunk \d+ "
                          r"\(slot \d+, copy \d\) not complete after ([\d.]+) s .*missing workers \[(.*?)\]", log)
        assert match, log[-2000:]
        assert int(match.group(2)) == tb.job.job_id
        assert match.group(4) == str(dead), match.group(0)  # the dead rank, and only it
        assert DEADLINE <= float(match.group(3)) < DEADLINE + SLACK, match.group(0)
        assert elapsed[name] <= bound, (name, elapsed[name], bound)


def _assert_clean(tb: Testbed, job_id: int, cells: range) -> None:
    """No entry, group, register cell or counter of ``job_id`` left on the switch."""
    node = tb.controller[tb.topology.switch().name]
    layout = node.layout
    span = f"{cells.start}:{cells.stop}"
    report = inspect_switch(node.switch, [(name, span) for name in (layout.bitmap, layout.count, *layout.acc)])
    assert report.jobs == ()
    assert len(report.registers) == 2 + layout.k
    for dump in report.registers:
        assert dump.start == cells.start and len(dump.values) == len(cells)
        assert not any(dump.values), f"{dump.name}[{span}] not zero: {dump.values}"
    assert all(cells_.get(job_id, 0) == 0 for cells_ in node.counters(job_id).values()), node.counters(job_id)
    workers = [e for e in node.switch.read_table(WORKERS_TABLE) if not e.is_default]
    assert workers == []
    assert tb.job.group not in node.switch.read_multicast_groups()


def dead_worker_scenario(tb: Testbed, kill_mid_job: bool) -> None:
    """The whole scenario on a started 4-worker testbed whose default job has ``WINDOW`` slots
    (also run in Mininet by ``tests/mininet/test_star_dead_worker.py``)."""
    job = tb.job
    hosts = tb.current_hosts()
    assert len(hosts) == 4 and job.slot_count == WINDOW
    node = tb.controller[tb.topology.switch().name]
    cells = range(2 * job.slot_base, 2 * (job.slot_base + job.slot_count))
    ranks = list(range(4)) if kill_mid_job else [r for r in range(4) if r != DEAD]
    procs = dict(tb.spawn_ina([SIZE], repeats=2, exact=True, ranks=ranks))
    dead_name = f"ina-{hosts[DEAD]}"
    try:
        if kill_mid_job:
            _wait_mid_job(tb, procs, completions=300)
            # The worker dies: SIGKILL of the ina_worker process only. Its agent child must stop
            # contributing by itself (it would otherwise finish the operation for a dead worker).
            agents = _agent_processes(procs[dead_name].pid)
            assert agents, f"{dead_name}: no agent process"
            os.kill(procs[dead_name].pid, signal.SIGKILL)
            since = time.monotonic()
            procs[dead_name].wait(timeout=10)
            assert procs[dead_name].returncode == -signal.SIGKILL
            while any(_running(pid) for pid in agents):
                assert time.monotonic() - since < AGENT_EXIT, f"agent processes {agents} outlived their worker"
                time.sleep(0.01)
            survivors = {n: p for n, p in procs.items() if n != dead_name}
            bound = DEADLINE + SLACK
        else:
            since = time.monotonic()
            survivors = procs
            bound = STARTUP + DEADLINE + SLACK
        elapsed = _wait_exits(survivors, since, timeout=bound + 30)
        _assert_survivors_name(tb, survivors, elapsed, DEAD, bound)
    finally:
        for name in procs:
            tb.procs.stop(name)
            tb.procs.forget(name)

    layout = node.layout
    counts = node.switch.read_register(layout.count, cells)
    bitmaps = node.switch.read_register(layout.bitmap, cells)
    stalled = [b for c, b in zip(counts, bitmaps) if 0 < c < 4]
    assert stalled, (counts, bitmaps)  # copies left waiting, each without the dead rank's bit
    assert all(b & (1 << DEAD) == 0 and b != 0 for b in stalled), [hex(b) for b in stalled]
    assert node.occupancy(job.job_id).busy == len(stalled)
    assert tb.controller.destroy_job(job.job_id) == [tb.topology.switch().name]
    _assert_clean(tb, job.job_id, cells)

    survivors_hosts = tuple(h for r, h in enumerate(hosts) if r != DEAD)
    tb.job = tb.create_job(job_id=job.job_id + 1, hosts=survivors_hosts, slot_base=job.slot_base,
                           slot_count=job.slot_count)
    (info,) = node.jobs()
    assert (info.job_id, info.num_workers, info.slot_base, info.slot_count) == (
        job.job_id + 1, 3, job.slot_base, job.slot_count)
    results = tb.run_ina([1, 1000, 5000], repeats=1, exact=True, timeout=120)
    assert [[r.rank for r in per_rank] for per_rank in results] == [[0] * 3, [1] * 3, [2] * 3]
    assert all(r.ok for per_rank in results for r in per_rank)  # every element bit-exact
    counters = tb.counters()
    assert counters["innet_completions"] > 0
    assert counters["innet_contributions"] == 3 * counters["innet_completions"]
    assert counters["innet_drops"] == 0
