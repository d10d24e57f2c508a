"""`innet testbed up`'s Mininet CLI, driven through its standard input like a user at the prompt:
every command's output must reach the terminal (it once printed nothing). Mininet
writes it to stderr, as `mn` does; a terminal shows both streams, so the test reads both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_cli_commands_print_their_output() -> None:
    commands = "h1 ping -c1 -W2 h2\npingall\nh1 ip -4 addr show dev h1-eth0\nexit\n"
    proc = subprocess.run([sys.executable, "-m", "innet.cli", "testbed", "up", "--topo", "star", "--workers", "2"],
                          input=commands, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=240, cwd=REPO)
    out = proc.stdout
    assert proc.returncode == 0, out
    assert "1 packets transmitted, 1 received" in out, out
    assert "*** Results: 0% dropped (2/2 received)" in out, out
    assert "inet 10.0.0.1/24" in out, out
    assert "testbed down" in out
