"""``innet-switch`` as a process: flags, errors, address report, clean shutdown."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from finsy.proto import p4r, p4r_grpc

PREFIX = "innet-switch: P4Runtime listening on "


def run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "innet.switch.cli.switch", *args],
                          capture_output=True, text=True, timeout=timeout)


def start(*args: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    """Start the switch; return the process, the gRPC address and the other startup lines."""
    proc = subprocess.Popen([sys.executable, "-m", "innet.switch.cli.switch", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"switch exited early: {proc.wait()} {proc.stderr.read()}")  # type: ignore[union-attr]
        if line.startswith(PREFIX):
            address = line[len(PREFIX):].strip()
            break
        lines.append(line)
    else:
        raise AssertionError("switch did not report its address")
    # the UDP port lines follow the address line
    return proc, address, lines


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    ([], "no program given"),
    (["--no-p4", "-u", "1@127.0.0.1:notaport"], "UDP port 'notaport' is not a number"),
    (["--no-p4", "-u", "1@127.0.0.1"], "expected HOST:UDPPORT"),
    (["--no-p4", "-u", "600@127.0.0.1:0"], "switch port 600 is outside"),
    (["--no-p4", "-i", "1@innet-no-such-if"], "interface 'innet-no-such-if'"),
    (["--no-p4", "--grpc-server-addr", "nonsense"], "expected HOST:PORT"),
    (["--no-p4", "--loss", "0.1,2,0"], "duplicate probability 2.0 is outside 0..1"),
    (["/nonexistent/prog.json"], "no such file"),
    (["--no-p4", "-u", "1@127.0.0.1:0", "-u", "1@127.0.0.1:0"], "port 1 is given more than once"),
    (["--no-p4", "--grpc-server-addr", "127.0.0.1:99999"], "port 99999 is outside 0..65535"),
    (["--no-p4", "--grpc-server-addr", "127.0.0.1:-1"], "port '-1' is not a number"),
    (["--no-p4", "--device-id", str(1 << 64)], f"{1 << 64} is outside 0..{(1 << 64) - 1}"),
    (["--no-p4", "--device-id", "-1"], "-1 is outside 0.."),
    (["--no-p4", "--pcap", sys.executable], f"{sys.executable!r} exists and is not a directory"),
    ([str(Path(__file__).parent)], "is a directory, not a file"),
])
def test_bad_flags_exit_2_with_one_line(args, message):
    result = run(*args)
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("innet-switch: error: ") and message in lines[0]
    assert "Traceback" not in result.stderr


def test_busy_grpc_address_is_one_line_error():
    proc, address, _ = start("--no-p4", "--grpc-server-addr", "127.0.0.1:0")
    try:
        result = run("--no-p4", "--grpc-server-addr", address)
        assert result.returncode == 2
        assert "cannot bind" in result.stderr and "Traceback" not in result.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serves_on_reported_address_and_stops_on_signal(signum, tmp_path: Path):
    proc, address, _ = start("--no-p4", "--device-id", "3", "-u", "1@127.0.0.1:0",
                             "--cpu-port", "64", "--grpc-server-addr", "127.0.0.1:0",
                             "--pcap", str(tmp_path), "--log-level", "warning")
    try:
        assert proc.stdout is not None
        port_line = proc.stdout.readline()
        assert port_line.startswith("innet-switch: port 1 on UDP 127.0.0.1:")
        with grpc.insecure_channel(address) as channel:
            stub = p4r_grpc.P4RuntimeStub(channel)
            assert stub.Capabilities(p4r.CapabilitiesRequest(), timeout=10).p4runtime_api_version
            with pytest.raises(grpc.RpcError) as info:
                stub.GetForwardingPipelineConfig(p4r.GetForwardingPipelineConfigRequest(device_id=3),
                                                 timeout=10)
            assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        proc.send_signal(signum)
        assert proc.wait(timeout=10) == 0
    assert "Traceback" not in proc.stderr.read()  # type: ignore[union-attr]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["port1_in.pcap", "port1_out.pcap"]
