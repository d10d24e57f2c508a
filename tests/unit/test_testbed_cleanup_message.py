"""``innet testbed cleanup``'s message: "nothing to clean up" only when nothing was done, and
a failed run's directory it removes named. Tested through the command's function with a
private state directory and Mininet's part left out: as root the real command also ends
leftover Mininet switches and deletes their interfaces machine-wide, which must not run
while other testbeds may be up."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

import pytest

from innet.testbed.backends.mininet import clean
from innet.testbed.cli.commands import cmd_testbed_down
from innet.testbed.core.state import STATE_ENV


@pytest.fixture
def private_cleanup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    monkeypatch.setenv(STATE_ENV, str(tmp_path / "state"))
    monkeypatch.setattr(clean, "cleanup", functools.partial(clean.cleanup, runs, mininet=False))
    return runs


def _cleanup(capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert cmd_testbed_down(argparse.Namespace(action="cleanup", name=None, runtime="process")) == 0
    return capsys.readouterr().out.splitlines()


def test_nothing_to_clean_up_when_there_is_nothing(private_cleanup: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert _cleanup(capsys) == ["nothing to clean up"]


def test_a_failed_runs_directory_is_removed_and_said(private_cleanup: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    failed = private_cleanup / "run-1234"  # kept after an error: logs, nobody holds its lock
    failed.mkdir()
    (failed / "innet-switch-s1.log").write_text("innet-switch: error\n")
    assert _cleanup(capsys) == [f"removed {failed} (run directory of a crashed run)"]
    assert not failed.exists()
    assert _cleanup(capsys) == ["nothing to clean up"]
