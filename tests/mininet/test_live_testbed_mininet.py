"""Two Mininet testbeds run by a user with the commands they type: the first is listed by
``innet testbed status`` with its switch's interfaces and P4Runtime address (9559 when free)
and changed with ``--testbed NAME --switch s1`` beside its own controller; the second says
which testbed it waits for (Mininet's switch and interface names are per machine) and comes
up once ``innet testbed down NAME`` stopped only the first."""

from __future__ import annotations

import json
import os
from pathlib import Path

from testkit.testbed_cli import STATE_ENV, TestbedUp, innet, ok


def test_second_mininet_testbed_says_what_it_waits_for_and_down_by_name(tmp_path: Path) -> None:
    env = {**os.environ, STATE_ENV: str(tmp_path), "COLUMNS": "200"}
    first = TestbedUp(env, "--workers", "2", "-k", "64", "--no-cli", "--name", "mnone", timeout=240)
    second = None
    try:
        (doc,) = json.loads(ok(env, "testbed", "status", "--json"))
        (s1,) = doc["switches"]
        assert (doc["name"], doc["backend"], s1["name"]) == ("mnone", "mininet", "s1")
        assert s1["interfaces"] == {"1": "s1-eth1", "2": "s1-eth2"} and s1["udp_ports"] == {}
        port = int(s1["p4runtime"].rpartition(":")[2])
        assert port == 9559 or f"P4Runtime port 9559 is taken; using {port}" in first.text()
        tb = ["--testbed", "mnone", "--switch", "s1"]
        assert "worker set attached at epoch 1" in ok(env, "job", "attach", *tb, "--job", "1")
        assert "MyIngress.ipv4_lpm dstAddr=10.0.0.1/32 => MyIngress.ipv4_forward(mac=00:00:00:00:00:01, port=1)" \
            in ok(env, "table", "dump", *tb, "ipv4_lpm")

        second = TestbedUp(env, "--workers", "2", "-k", "64", "--no-cli", "--name", "mntwo", wait=False)
        second.wait_for(f"waiting for testbed mnone (pid {doc['pid']}", 120)
        assert "one Mininet testbed runs at a time on a machine" in second.text()
        assert "`innet testbed down mnone` stops it" in second.text()
        states = {d["name"]: d["status"] for d in json.loads(ok(env, "testbed", "status", "--json"))}
        assert states == {"mnone": "up", "mntwo": "starting"}

        assert ok(env, "testbed", "down", "mnone").startswith("stopped testbed mnone")
        second.wait_for("is up", 240)
        assert [d["name"] for d in json.loads(ok(env, "testbed", "status", "--json"))] == ["mntwo"]
        assert "job 1 sum workers=2" in ok(env, "job", "list", "--testbed", "mntwo")
        assert ok(env, "testbed", "down", "mntwo").startswith("stopped testbed mntwo")
        result = innet(env, "testbed", "status")
        assert result.returncode == 0 and result.stdout.startswith("no testbed is running")
    finally:
        for up in (second, first):
            if up is not None:
                up.stop()
