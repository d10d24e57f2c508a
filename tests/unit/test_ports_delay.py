"""The switch's port delay stage (``--port-delay``): WAN delay where the kernel has no netem."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from innet.switch.cli.switch import UsageError, build_parser, options_from_args
from innet.switch.ports import DelayedPort, PortError


class _Recorder:
    """A port that records when each frame was sent."""

    number = 101

    def __init__(self) -> None:
        self.sent: list[tuple[float, bytes]] = []
        self.closed = False
        self.lock = threading.Lock()

    def fileno(self) -> int:
        return -1

    def receive(self) -> bytes | None:
        return b"in"

    def send(self, frame: bytes) -> None:
        with self.lock:
            self.sent.append((time.monotonic(), frame))

    def close(self) -> None:
        self.closed = True


def test_output_leaves_after_the_delay_in_order_and_input_is_not_delayed() -> None:
    inner = _Recorder()
    port = DelayedPort(inner, 30.0)
    try:
        assert port.number == 101 and port.receive() == b"in"
        start = time.monotonic()
        for i in range(5):
            port.send(bytes([i]))
        assert inner.sent == []  # nothing leaves before its time
        deadline = time.monotonic() + 5
        while len(inner.sent) < 5:
            assert time.monotonic() < deadline, "delayed frames never left"
            time.sleep(0.005)
        assert [f for _, f in inner.sent] == [bytes([i]) for i in range(5)]
        assert all(t - start >= 0.030 for t, _ in inner.sent)
    finally:
        port.close()
    assert inner.closed


def test_a_negative_delay_is_refused_by_port() -> None:
    with pytest.raises(PortError, match="port 101: delay -1.0 ms must be >= 0"):
        DelayedPort(_Recorder(), -1.0)


@pytest.mark.parametrize("flag, message", [
    ("101", "--port-delay '101': expected PORT=MS, e.g. 101=40"),
    ("101=x", "--port-delay '101=x': expected PORT=MS"),
    ("600=5", "--port-delay '600=5': port must be in 0..510"),
])
def test_bad_port_delay_flags_are_named(flag: str, message: str) -> None:
    args = build_parser().parse_args(["--no-p4", "--port-delay", flag])
    with pytest.raises(UsageError, match=message):
        options_from_args(args)


def test_port_delay_flags_reach_the_options() -> None:
    args = build_parser().parse_args(["--no-p4", "--port-delay", "101=40", "--port-delay", "102=2.5"])
    assert options_from_args(args).port_delays == ((101, 40.0), (102, 2.5))


def test_a_delay_on_a_port_the_switch_does_not_have_is_one_line_and_non_zero() -> None:
    proc = subprocess.run([sys.executable, "-m", "innet.switch.cli.switch", "--no-p4", "-u", "1@127.0.0.1:0",
                           "--port-delay", "7=5", "--grpc-server-addr", "127.0.0.1:0"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "--port-delay: switch port 7 is not a data port" in proc.stderr
