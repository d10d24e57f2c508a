"""Waiting for a set of worker processes: the error names the one that failed first."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from innet.testbed.core import testbed as bringup
from innet.testbed.core.testbed import wait_outputs
from innet.testbed.core.processes import ProcessGroup, alive


def _script(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_outputs_of_processes_that_all_succeed(tmp_path: Path) -> None:
    with ProcessGroup(state_dir=tmp_path) as group:
        procs = [(f"w{i}", group.spawn(f"w{i}", _script(f"print('rank {i}')"), stdout_pipe=True)) for i in range(3)]
        outputs = wait_outputs(group, procs, 30, "test run")
        assert outputs == {f"w{i}": f"rank {i}\n".encode() for i in range(3)}
        assert group.popens == {}  # forgotten: the names can be used again


def test_the_first_failure_is_reported_not_the_first_in_order(tmp_path: Path) -> None:
    with ProcessGroup(state_dir=tmp_path) as group:
        procs = [
            ("victim", group.spawn("victim", _script(
                "import sys, time; time.sleep(1.0); print('peer went missing', file=sys.stderr); sys.exit(4)"),
                stdout_pipe=True)),
            ("culprit", group.spawn("culprit", _script(
                "import sys; print('cannot listen: address in use', file=sys.stderr); sys.exit(3)"),
                stdout_pipe=True)),
        ]
        with pytest.raises(bringup.TestbedError) as error:
            wait_outputs(group, procs, 60, "test run", grace=10)
        message = str(error.value)
        assert message.startswith("test run: culprit exited with status 3; its log:\ncannot listen: address in use")
        assert "then victim exited with status 4: peer went missing" in message


def test_a_process_still_running_after_a_failure_is_stopped(tmp_path: Path) -> None:
    with ProcessGroup(state_dir=tmp_path) as group:
        hang = group.spawn("hang", _script("import time; time.sleep(600)"), stdout_pipe=True)
        fail = group.spawn("fail", _script("import sys; sys.exit(2)"), stdout_pipe=True)
        records = list(group.records)
        with pytest.raises(bringup.TestbedError, match=r"^test run: fail exited with status 2"):
            wait_outputs(group, [("hang", hang), ("fail", fail)], 600, "test run", grace=0.5)
        assert hang.poll() is not None
        assert not any(alive(r) for r in records)


def test_a_process_that_does_not_finish_in_time(tmp_path: Path) -> None:
    with ProcessGroup(state_dir=tmp_path) as group:
        hang = group.spawn("hang", _script("import sys, time; print('waiting', file=sys.stderr, flush=True); "
                                           "time.sleep(600)"), stdout_pipe=True)
        with pytest.raises(bringup.TestbedError, match=r"test run: hang did not finish within 1 s; the log of hang:\n"):
            wait_outputs(group, [("hang", hang)], 1, "test run")
        assert hang.poll() is not None
