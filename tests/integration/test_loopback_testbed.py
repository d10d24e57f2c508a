"""Loopback testbed (no root): bring-up, exact allreduce through innet-switch, teardown and crash cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.backends.mininet.clean import cleanup
from innet.testbed.backends.select import open_testbed
from innet.testbed.core.processes import MARK_ENV, find_marked, pid_alive, stale_runs
from innet.testbed.core.topology import star


def test_exact_sums_through_the_switch_and_nothing_left(tmp_path: Path) -> None:
    options = TestbedOptions(state_dir=tmp_path)
    with open_testbed(star(workers=3), options, backend="loopback") as tb:
        run_dir = tb.procs.dir
        switch_pid = tb.procs.popens["switch"].pid
        assert set(tb.network.switch_udp["s1"]) == {1, 2, 3}  # type: ignore[attr-defined]
        results = tb.run_ina([1, 64, 1000], repeats=1, exact=True, timeout=120)
        assert [[r.elements for r in per_rank] for per_rank in results] == [[1, 64, 1000]] * 3
        assert all(r.ok for per_rank in results for r in per_rank)
        counters = tb.counters()
        # 1, 1 and 16 chunks, two operations each (warm-up + timed), a one-chunk barrier
        # before and after each operation, and one at start.
        assert counters["innet_completions"] == 2 * (1 + 1 + 16) + 3 * 2 * 2 + 1
        assert counters["innet_contributions"] == 3 * counters["innet_completions"]
        assert counters["innet_drops"] == 0
        ina_pids = [r.pid for r in tb.procs.records]
    assert not pid_alive(switch_pid)
    assert not any(pid_alive(p) for p in ina_pids)
    assert not run_dir.exists()
    assert find_marked(only_run=str(run_dir)) == []


@pytest.mark.slow
def test_reused_job_is_exact_for_every_worker_set(tmp_path: Path) -> None:
    """Three worker sets one after another on the same live job, each starting at
    stream position 0 on the slot copies the previous set left complete."""
    with open_testbed(star(workers=2), TestbedOptions(state_dir=tmp_path), backend="loopback") as tb:
        for run in range(3):
            results = tb.run_ina([1000], repeats=1, exact=True, timeout=120)
            assert all(r.ok for per_rank in results for r in per_rank), f"run {run}"
        node = tb.controller[tb.topology.switch().name]
        assert node.job(tb.job.job_id).epoch == 3
        assert tb.counters()["innet_stale"] == 0


def test_lossy_switch_output_still_sums_exactly(tmp_path: Path) -> None:
    options = TestbedOptions(state_dir=tmp_path, switch_loss=0.05)
    with open_testbed(star(workers=2), options, backend="loopback") as tb:
        assert "--loss" in tb.network.switch_command("s1")  # type: ignore[attr-defined]
        results = tb.run_ina([2000], repeats=1, exact=True, timeout=120)
        assert all(r.ok for per_rank in results for r in per_rank)
        assert sum(r.stats["retransmitted"] for per_rank in results for r in per_rank) > 0
        assert tb.counters()["innet_duplicates"] > 0


def test_failed_bring_up_leaves_nothing(tmp_path: Path) -> None:
    options = TestbedOptions(state_dir=tmp_path, program=tmp_path / "missing.p4")
    tb = open_testbed(star(workers=2), options, backend="loopback")
    with pytest.raises(Exception, match=r"missing.p4"):
        tb.start()
    assert all(not pid_alive(r.pid) for r in tb.procs.records)
    assert find_marked(only_run=str(tb.procs.dir)) == []


CRASHER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from innet.testbed.core.testbed import TestbedOptions
    from innet.testbed.backends.select import open_testbed
    from innet.testbed.core.topology import star
    tb = open_testbed(star(workers=2), TestbedOptions(state_dir=Path(sys.argv[1])), backend="loopback").start()
    tb.spawn_on("h1", "sleeper", [sys.executable, "-c", "import time; time.sleep(600)"])
    print("up", flush=True)
    time.sleep(600)
""")


def test_cleanup_after_a_killed_run(tmp_path: Path) -> None:
    """SIGKILL the process that owns a testbed: cleanup() ends its switch and workers."""
    owner = subprocess.Popen([sys.executable, "-c", CRASHER, str(tmp_path)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()
        assert line.strip() == b"up", owner.stderr.read().decode() if owner.stderr else ""
        runs = list(tmp_path.iterdir())
        assert len(runs) == 1
        assert stale_runs(tmp_path) == []  # the owner holds the lock
        assert cleanup(tmp_path, mininet=False) == []  # a live run is left alone
        victims = [pid for pid, run in find_marked() if run == str(runs[0])]
        assert len(victims) == 2  # switch and sleeper
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        assert all(pid_alive(p) for p in victims)  # orphans keep running
        assert stale_runs(tmp_path) == runs
        done = cleanup(tmp_path, mininet=False)
        assert any("ended switch" in d for d in done) and any("ended sleeper" in d for d in done)
        assert f"removed {runs[0]} (run directory of a crashed run)" in done  # said, never "nothing to clean up"
        deadline = time.monotonic() + 10
        while any(pid_alive(p) for p in victims) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(pid_alive(p) for p in victims)
        assert not runs[0].exists()
        assert cleanup(tmp_path, mininet=False) == []
    finally:
        if owner.poll() is None:
            os.killpg(owner.pid, signal.SIGKILL)
        owner.wait(timeout=10)
        for pid, run in find_marked():
            if Path(run).parent == tmp_path:
                os.kill(pid, signal.SIGKILL)


def test_marker_is_in_the_environment_of_spawned_processes(tmp_path: Path) -> None:
    with open_testbed(star(workers=2), TestbedOptions(state_dir=tmp_path), backend="loopback") as tb:
        popen = tb.spawn_on("h2", "echo", [sys.executable, "-c", f"import os; print(os.environ['{MARK_ENV}'])"],
                            stdout_pipe=True)
        out, _ = popen.communicate(timeout=30)
        assert out.decode().strip() == str(tb.procs.dir)


@pytest.mark.parametrize("interrupt, kept", [(KeyboardInterrupt, False), (RuntimeError, True)])
def test_run_dir_is_kept_only_after_a_real_failure(interrupt: type[BaseException], kept: bool, tmp_path: Path) -> None:
    with pytest.raises(interrupt):
        with open_testbed(star(workers=2), TestbedOptions(state_dir=tmp_path), backend="loopback") as tb:
            run_dir = tb.procs.dir
            raise interrupt("stop")
    assert run_dir.exists() == kept


@pytest.mark.slow
def test_testbed_up_ctrl_c_removes_its_run_dir(tmp_path: Path) -> None:
    """``innet testbed up --backend loopback --no-cli``, SIGINT once it waits: clean stop, no run dir left;
    loopback was asked for, so it never says "not root" (as root neither)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the state directory lives under it
    # a Ctrl-C as a terminal delivers it: SIGINT's default action restored in the child, since a
    # suite started in the background by a shell without job control inherits it ignored (and
    # Python then installs no KeyboardInterrupt handler)
    proc = subprocess.Popen([sys.executable, "-m", "innet.cli", "testbed", "up", "--backend", "loopback", "--no-cli",
                             "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        lines = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(f"testbed up exited early: {''.join(lines)} {proc.stderr.read()}")  # type: ignore[union-attr]
            lines.append(line)
            if line.startswith("waiting; Ctrl-C"):
                break
        else:
            raise AssertionError(f"testbed up not ready within the deadline: {''.join(lines)}")
        state = tmp_path / f"innet-testbed-{os.getuid()}"
        runs = list(state.iterdir())
        assert len(runs) == 1 and (runs[0] / "owner").exists()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "testbed down" in out and "Traceback" not in err and "not root" not in out
        assert list(state.iterdir()) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        for pid, run in find_marked():
            if Path(run).is_relative_to(tmp_path):
                os.kill(pid, signal.SIGKILL)
