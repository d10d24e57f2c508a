"""A live loopback testbed found and changed with the commands a user types: ``innet testbed
up --name`` on the loopback backend, ``testbed status``/``ls``, ``inspect``/``job``/``params``/``table``/
``counter``/``register`` with ``--testbed NAME --switch s1`` beside the testbed's own
controller, predictable ports (9559+n, the next free one when taken), ``testbed down NAME``
stopping only that testbed, stale state files, and the error lines of each."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from testkit.testbed_cli import STATE_ENV, TestbedUp, innet, loopback_flags, ok

WORKERS = ["0,1,00:00:00:00:00:01,10.0.0.1,18767", "1,2,00:00:00:00:00:02,10.0.0.2,18767"]


def loopback_up(env: dict[str, str], *args: str) -> TestbedUp:
    return TestbedUp(env, *loopback_flags(), "--workers", "2", "-k", "64", *args)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, STATE_ENV: str(tmp_path), "COLUMNS": "200"}


@pytest.fixture
def testbed(env: dict[str, str]) -> Iterator[TestbedUp]:
    up = loopback_up(env, "--name", "alpha")
    try:
        yield up
    finally:
        up.stop()


@pytest.mark.slow
def test_status_lists_the_testbed_with_its_switch_and_udp_ports(env, testbed):
    assert "UDP ports: 1=127.0.0.1:" in testbed.text()  # printed by up, on loopback too
    (doc,) = json.loads(ok(env, "testbed", "status", "--json"))
    assert (doc["name"], doc["backend"], doc["live"], doc["status"]) == ("alpha", "loopback", True, "up")
    (s1,) = doc["switches"]
    assert s1["name"] == "s1" and s1["p4runtime"].startswith("127.0.0.1:") and set(s1["udp_ports"]) == {"1", "2"}
    port = int(s1["p4runtime"].rpartition(":")[2])
    assert port == 9559 or f"P4Runtime port 9559 is taken; using {port}" in testbed.text()
    text = ok(env, "testbed", "ls")
    assert f"alpha: up, loopback, topology star2" in text and f"P4Runtime {s1['p4runtime']}" in text
    assert f"pid {s1['pid']}" in text and s1["log"] in text


@pytest.mark.slow
def test_commands_address_the_switch_by_testbed_and_name_beside_its_controller(env, testbed, tmp_path):
    tb = ["--testbed", "alpha", "--switch", "s1"]
    listed = ok(env, "job", "list", *tb)
    assert "job 1 sum workers=2" in listed and listed.startswith("s1 (127.0.0.1:")  # the testbed's name
    # writes: a fresh election id in role innet-cli, while the testbed's controller holds id 1
    out = ok(env, "job", "create", *tb, "--job", "3", "--slot-base", "200", "--slot-count", "4",
             "--mode", "sgd", "--param-chunks", "2", "--worker", WORKERS[0], "--worker", WORKERS[1])
    assert out.strip() == "job 3 on s1: chunks 0+2"
    assert "worker set attached at epoch 1" in ok(env, "job", "attach", *tb, "--job", "3")
    np.save(tmp_path / "w.npy", np.arange(8, dtype=np.float32))
    assert "loaded 8 parameters" in ok(env, "params", "load", *tb, "--job", "3", str(tmp_path / "w.npy"))
    read = ok(env, "params", "read", *tb, "--job", "3", "--size", "8").split()
    assert [float(v) for v in read] == list(range(8))
    assert json.loads(ok(env, "inspect", *tb, "--json", "--job", "3"))["jobs"][0]["job_id"] == 3
    assert ok(env, "job", "destroy", "--testbed", "alpha", "--job", "3").strip() == "job 3 destroyed on s1"

    # an election id given explicitly is the default role's: id 1 is the testbed's, and the message says so
    result = innet(env, "job", "attach", *tb, "--job", "1", "--election-id", "1")
    assert result.returncode == 1
    assert "election id 1 is already used by another live controller" in result.stderr
    assert "use another election id (above 1 to become primary)" in result.stderr
    assert "without --election-id take a free id in role 'innet-cli'" in result.stderr


@pytest.mark.slow
def test_pipeline_push_to_a_testbed_builds_for_its_switch_implementation(env, testbed):
    """The state file says the switch is innet-switch: the config pushed is built for it, and the line says so."""
    (doc,) = json.loads(ok(env, "testbed", "status", "--json"))
    address = doc["switches"][0]["p4runtime"]
    example = Path(__file__).resolve().parents[2] / "p4" / "examples" / "basic_forward.p4"
    out = ok(env, "pipeline", "push", "--testbed", "alpha", "--switch", "s1", str(example))
    assert out.strip() == f"pushed basic_forward to {address} (innet)"


@pytest.mark.slow
def test_table_counter_register_commands(env, testbed):
    tb = ["--testbed", "alpha", "--switch", "s1"]
    out = ok(env, "table", "add", *tb, "ipv4_lpm", "ipv4_forward", "10.0.9.0/24", "=>", "00:00:00:00:09:09", "3")
    assert out.strip() == ("added on s1 (127.0.0.1:" + out.split("127.0.0.1:")[1].split(")")[0] + "): "
                           "MyIngress.ipv4_lpm dstAddr=10.0.9.0/24 => MyIngress.ipv4_forward(mac=00:00:00:00:09:09, port=3)")
    ok(env, "table", "modify", *tb, "ipv4_lpm", "ipv4_forward", "dstAddr=10.0.9.0/24", "=>", "port=4",
       "mac=00:00:00:00:09:0a")
    dump = ok(env, "table", "dump", *tb, "ipv4_lpm")
    assert "MyIngress.ipv4_lpm: 3 entries" in dump  # the testbed's two hosts and ours
    assert "dstAddr=10.0.9.0/24 => MyIngress.ipv4_forward(mac=00:00:00:00:09:0a, port=4)" in dump
    assert "MyIngress.ipv4_lpm (default) => MyIngress.drop()" in dump
    assert json.loads(ok(env, "table", "dump", *tb, "ipv4_lpm", "--json"))["MyIngress.ipv4_lpm"]["default"]
    assert "deleted on" in ok(env, "table", "delete", *tb, "ipv4_lpm", "10.0.9.0/24")
    assert "10.0.9.0" not in ok(env, "table", "dump", *tb, "ipv4_lpm")

    result = innet(env, "table", "add", *tb, "ipv4_lmp", "ipv4_forward", "10.0.9.0/24")
    assert result.returncode == 1
    assert result.stderr.strip() == ("innet table: error: no table named 'ipv4_lmp' in the P4Info. "
                                     "Did you mean 'MyIngress.ipv4_lpm'?")
    result = innet(env, "table", "add", *tb, "ipv4_lpm", "ipv4_forward", "10.0.9.0/24", "=>", "1")
    assert result.returncode == 1 and "missing parameter(s) 'port'" in result.stderr

    assert "wrote 3 cell(s) of MyIngress.innet_param_0 from index 3" in ok(
        env, "register", "write", *tb, "innet_param_0", "3", "7", "8", "-1")
    assert ok(env, "register", "read", *tb, "innet_param_0", "--range", "2:6").strip() == \
        "MyIngress.innet_param_0[2:6] = 0 7 8 4294967295"
    assert "MyIngress.innet_param_0: " in ok(env, "register", "read", *tb)
    result = innet(env, "register", "read", *tb, "innet_param_0", "--range", "5:2")
    assert result.returncode == 1 and "index range '5:2' is empty or outside" in result.stderr

    assert "MyIngress.innet_drops: 16 cells" in ok(env, "counter", "read", *tb, "innet_drops")
    assert "reset 1 cell(s) of MyIngress.innet_drops" in ok(env, "counter", "reset", *tb, "innet_drops", "--index", "1")
    cells = json.loads(ok(env, "counter", "read", *tb, "innet_drops", "--index", "1", "--json"))
    assert cells == {"MyIngress.innet_drops": {"1": {"packets": 0, "bytes": 0}}}


@pytest.mark.slow
def test_two_testbeds_side_by_side_and_down_by_name(env, testbed):
    second = loopback_up(env, "--name", "beta")
    try:
        states = {d["name"]: d for d in json.loads(ok(env, "testbed", "status", "--json"))}
        assert set(states) == {"alpha", "beta"}
        a, b = (states[n]["switches"][0]["p4runtime"] for n in ("alpha", "beta"))
        port = int(b.rpartition(":")[2])
        assert a != b and (port == 9559 or f"P4Runtime port 9559 is taken; using {port}" in second.text())

        # --switch s1 alone is ambiguous with two testbeds: the line says which exist
        result = innet(env, "inspect", "--switch", "s1")
        assert result.returncode == 1
        assert result.stderr.strip() == "innet inspect: error: 2 testbeds are running (alpha, beta): name one with --testbed"
        result = innet(env, "testbed", "up", *loopback_flags(), "--name", "beta")
        assert result.returncode == 2
        assert "--name: testbed name 'beta' is taken by a running testbed" in result.stderr
        assert "innet testbed down beta" in result.stderr

        assert ok(env, "testbed", "down", "beta").startswith("stopped testbed beta")
        second.proc.wait(timeout=30)
        assert [d["name"] for d in json.loads(ok(env, "testbed", "status", "--json"))] == ["alpha"]
        assert testbed.proc.poll() is None  # the other testbed still runs
    finally:
        second.stop()
    result = innet(env, "testbed", "down", "beta")
    assert result.returncode == 1
    assert result.stderr.strip() == "innet testbed down: no running testbed 'beta'; running: alpha (innet testbed status)"


def test_stale_state_file_is_reported_and_removed(env, tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    doc = {"format": "innet-testbed-state/1", "name": "gone", "backend": "loopback", "topology": "star2",
           "pid": int(dead), "pid_ticks": 1, "run_dir": "/nonexistent", "started": "2026-01-01T00:00:00Z",
           "switches": [{"name": "s1", "device_id": 1, "p4runtime": "127.0.0.1:9559"}]}
    (tmp_path / "gone.json").write_text(json.dumps(doc))
    result = innet(env, "testbed", "status")
    assert result.returncode == 0
    assert f"removed stale testbed gone (pid {dead} gone)" in result.stderr
    assert result.stdout.strip() == f"no testbed is running (state files in {tmp_path})"
    assert not (tmp_path / "gone.json").exists()
    result = innet(env, "inspect", "--testbed", "gone")
    assert result.returncode == 1 and "no running testbed 'gone'; running: none" in result.stderr


def test_refused_address_fails_at_once_with_a_clear_line(env):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    result = innet(env, "inspect", "--switch", address, "--timeout", "60", timeout=20)  # not the 60 s deadline
    assert result.returncode == 1
    assert result.stderr.strip() == (f"innet inspect: error: switch {address}: connection refused (no P4Runtime server "
                                     "listens there); no testbed is running (innet testbed up) and no switch "
                                     "listens at that address")


SHELL_READ = """
import sys
import p4runtime_sh.shell as sh
sh.setup(device_id=1, grpc_addr=sys.argv[1], election_id=(1, 0), verbose=False)
try:
    print(len(list(sh.TableEntry("MyIngress.ipv4_lpm").read())))
finally:
    sh.teardown()
"""


@pytest.mark.slow
def test_p4runtime_shell_reads_the_testbed_at_the_printed_address(env, testbed, shell_python, tmp_path):
    (doc,) = json.loads(ok(env, "testbed", "status", "--json"))
    address = doc["switches"][0]["p4runtime"]
    assert f"s1: P4Runtime {address} (device 1)" in testbed.text()
    result = subprocess.run([str(shell_python), "-c", SHELL_READ, address], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2"  # the route of each host the testbed installed
    # and innet's own write commands still work beside both
    assert "worker set attached" in ok(env, "job", "attach", "--testbed", "alpha", "--job", "1")


def test_status_marks_a_dead_switch_of_a_running_testbed(env, tmp_path):
    from innet.testbed.core.state import SwitchState, new_state, with_switches, write_state

    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    state = with_switches(new_state("mine", "loopback", "star2", tmp_path / "run", k=64),  # owned by this test
                          [SwitchState("s1", 1, "127.0.0.1:9559", pid=dead, log="/x/switch.log")], [])
    write_state(state, tmp_path)
    out = ok(env, "testbed", "status", "mine")
    assert f"s1 (innet, device 1): P4Runtime 127.0.0.1:9559, Thrift -, pid {dead} (exited), log /x/switch.log" in out
