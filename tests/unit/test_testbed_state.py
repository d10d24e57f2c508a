"""State files of live testbeds: round trip, names, liveness, stale files, lookup by name,
claimed ports, and the predictable port plan (9559+n, the next free port when taken)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from innet.testbed.core.freeport import predictable_ports
from innet.testbed.core.state import (
    SwitchState,
    TestbedStateError,
    claim,
    claimed_ports,
    clean_stale,
    find_testbed,
    list_states,
    new_state,
    remove_state,
    with_switches,
    write_state,
)


def _state(name: str, tmp_path: Path, port: int = 9559):
    state = new_state(name, "loopback", "star2", tmp_path / "run", k=64)
    return with_switches(state, [SwitchState("s1", 1, f"127.0.0.1:{port}", udp_ports={"1": "127.0.0.1:4000"})],
                         [("switch", 123, "/x/switch.log")])


def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)


def test_round_trip_and_lookup(tmp_path):
    state = _state("alpha", tmp_path)
    path = write_state(state, tmp_path)
    assert path == tmp_path / "alpha.json" and oct(path.stat().st_mode & 0o777) == "0o644"
    (read,) = list_states([tmp_path])
    assert replace(read, path=None) == state and read.live and read.status == "up"
    assert find_testbed("alpha", [tmp_path]).switch("s1").udp_ports == {"1": "127.0.0.1:4000"}
    assert find_testbed(None, [tmp_path]).name == "alpha"  # the only one
    with pytest.raises(TestbedStateError, match=r"testbed alpha has no switch 's2'; its switches: s1"):
        read.switch("s2")
    assert claimed_ports([tmp_path]) == {9559}
    remove_state(state, tmp_path)
    assert list_states([tmp_path]) == []


def test_names_are_claimed_once(tmp_path):
    starting = new_state("-", "loopback", "star2", tmp_path / "run")
    write_state(_state("tb1", tmp_path), tmp_path)
    second = claim(starting, None, tmp_path, [tmp_path])
    assert second.name == "tb2" and (tmp_path / "tb2.json").exists()
    assert claim(starting, None, tmp_path, [tmp_path]).name == "tb3"  # tb2's file is there: never one name twice
    with pytest.raises(TestbedStateError, match=r"testbed name 'tb1' is taken by a running testbed \(pid \d+, "
                                                r"loopback, star2\): choose another --name"):
        claim(starting, "tb1", tmp_path, [tmp_path])
    with pytest.raises(TestbedStateError, match=r"testbed name 'a/b': use 1..32 letters"):
        claim(starting, "a/b", tmp_path, [tmp_path])


def test_stale_files_are_found_and_removed(tmp_path):
    dead = replace(_state("gone", tmp_path), pid=_dead_pid())
    write_state(dead, tmp_path)
    write_state(_state("here", tmp_path, 9560), tmp_path)
    assert {s.name: s.live for s in list_states([tmp_path])} == {"gone": False, "here": True}
    with pytest.raises(TestbedStateError, match=r"no running testbed 'gone' \(its owner, pid \d+, is gone: a stale "
                                                r"state file\); running: here"):
        find_testbed("gone", [tmp_path])
    assert claimed_ports([tmp_path]) == {9560}  # a dead testbed's ports are free again
    assert claim(dead, "gone", tmp_path, [tmp_path]).name == "gone"  # its name too (the stale file goes)
    write_state(dead, tmp_path)
    assert clean_stale([tmp_path]) == [f"removed stale testbed gone (pid {dead.pid} gone): {tmp_path / 'gone.json'}"]
    assert [s.name for s in list_states([tmp_path])] == ["here"]


def test_find_without_a_name_needs_exactly_one(tmp_path):
    with pytest.raises(TestbedStateError, match=r"no testbed is running \(innet testbed up starts one\)"):
        find_testbed(None, [tmp_path])
    write_state(_state("a", tmp_path), tmp_path)
    write_state(_state("b", tmp_path), tmp_path)
    with pytest.raises(TestbedStateError, match=r"2 testbeds are running \(a, b\): name one with --testbed"):
        find_testbed(None, [tmp_path])


def test_unreadable_files_are_skipped(tmp_path):
    (tmp_path / "junk.json").write_text("{not json")
    (tmp_path / "other.json").write_text(json.dumps({"format": "something-else"}))
    assert list_states([tmp_path]) == []


def test_predictable_ports_move_past_taken_ones():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        base = held.getsockname()[1]
        plan = predictable_ports(base, 2, avoid={base + 1})
    assert plan[0][0] == base and plan[1][0] == base + 1
    assert plan[0][1] >= base + 2 and plan[1][1] > plan[0][1]  # both moved above the block
