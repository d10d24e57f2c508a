"""``innet`` control subcommands against ``innet-switch`` as a subprocess (loopback UDP
ports, gRPC on port 0) running p4/innet.p4 (K=4, small sizes, pushed by ``innet
pipeline push``): jobs, parameters, inspect (tables and JSON), one real aggregation
round through the switch's UDP ports, destroy leaving zeros, and the error paths."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from innet.controller.switch import Switch, SwitchEndpoint
from innet.wire import UDP_PORT, Endpoint, Message, MsgType, frame, pack, parse_frame, unpack

ROOT = Path(__file__).parents[2]
INNET = ROOT / "p4" / "innet.p4"
K = 4
SWITCH_IP, SWITCH_MAC = "10.0.0.254", "00:00:00:00:00:fe"
WORKERS = [("00:00:00:00:00:01", "10.0.0.1", 6001), ("00:00:00:00:00:02", "10.0.0.2", 6002)]
PREFIX = "innet-switch: P4Runtime listening on "


def innet(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "innet.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def ok(*args: str) -> str:
    result = innet(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def switch():
    proc = subprocess.Popen([sys.executable, "-m", "innet.switch.cli.switch", "--no-p4",
                             "-u", "1@127.0.0.1:0", "-u", "2@127.0.0.1:0",
                             "--grpc-server-addr", "127.0.0.1:0", "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith(PREFIX), line
        ports = {}
        for _ in range(2):
            words = proc.stdout.readline().split()  # innet-switch: port N on UDP HOST:PORT
            host, port = words[-1].rsplit(":", 1)
            ports[int(words[2])] = (host, int(port))
        yield line[len(PREFIX):], ports
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def worker_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(10)
    return s


def contrib(rank: int, values: list[int]) -> bytes:
    mac, ip, port = WORKERS[rank]
    msg = Message(MsgType.CONTRIB, job=1, worker=rank, slot=0, chunk=1, values=np.array(values, dtype=np.int32))
    return frame(Endpoint(mac, ip, port), Endpoint(SWITCH_MAC, SWITCH_IP, UDP_PORT), pack(msg, K))


@pytest.mark.slow
def test_job_lifecycle_with_an_aggregation_round(switch, tmp_path):
    address, ports = switch
    sw = ["--switch", address]
    assert "pushed innet" in ok("pipeline", "push", *sw, str(INNET), "-D", "INNET_K=4", "-D", "INNET_SLOTS=8",
                                "-D", "INNET_PARAM_CHUNKS=16", "-D", "INNET_MAX_JOBS=4")
    workers = [f"{r},{r + 1},{mac},{ip},{udp}" for r, (mac, ip, udp) in enumerate(WORKERS)]
    out = ok("job", "create", *sw, "--job", "1", "-k", "4", "--worker", workers[0], "--worker", workers[1],
             "--slot-base", "2", "--slot-count", "2", "--mode", "sgd", "--lr", "0.5", "--param-chunks", "3",
             "--grad-frac-bits", "8", "--param-frac-bits", "8", "--switch-ip", SWITCH_IP, "--switch-mac", SWITCH_MAC)
    assert out.strip() == f"job 1 on {address}: chunks 0+3"
    assert "job 1 sgd workers=2 slots=2+2 params=0+3" in ok("job", "list", *sw)

    params = np.arange(10, dtype=np.float32) / 4  # 10 elements: chunks 0..2, zero padded
    np.save(tmp_path / "w.npy", params)
    ok("params", "load", *sw, "--job", "1", "--param-frac-bits", "8", str(tmp_path / "w.npy"))
    ok("params", "read", *sw, "--job", "1", "--param-frac-bits", "8", "--size", "10", "-o", str(tmp_path / "r.npy"))
    assert np.array_equal(np.load(tmp_path / "r.npy"), params)

    doc = json.loads(ok("inspect", *sw, "--json", "--register", "MyIngress.innet_param_0", "--range", "0:4"))
    (job,) = doc["jobs"]
    assert (job["job_id"], job["mode"], job["slot_base"], job["param_chunks"]) == (1, "sgd", 2, 3)
    assert doc["registers"] == [{"name": "MyIngress.innet_param_0", "start": 0, "values": [0, 256, 512, 0]}]

    # one round: both workers contribute chunk 1 (elements 4..7); the switch applies
    # w -= (lr * g) >> lr_shift and multicasts the new w to both workers
    s0, s1 = worker_socket(), worker_socket()
    g0, g1 = [256, -512, 1024, 0], [256, 0, 1024, 7]
    s0.sendto(contrib(0, g0), ports[1])
    s1.sendto(contrib(1, g1), ports[2])
    lr, shift = job["lr"], job["lr_shift"]
    w = (np.arange(4, 8) * 64).tolist()  # elements 4..7 at 8 fractional bits
    expect = [wi - ((lr * (a + b)) >> shift) for wi, a, b in zip(w, g0, g1)]
    for sock, (mac, ip, udp) in zip((s0, s1), WORKERS):
        parsed = parse_frame(sock.recvfrom(4096)[0])
        assert parsed is not None and parsed.dst_port == udp and parsed.src_ip == socket.inet_aton(SWITCH_IP)
        result = unpack(parsed.payload, K)
        assert result.msg_type == MsgType.RESULT and result.bitmap == 0b11 and result.num_workers == 2
        assert result.values.tolist() == expect
    s0.close()
    s1.close()
    read = ok("params", "read", *sw, "--job", "1", "--param-frac-bits", "8", "--raw", "--size", "8").split()
    assert [int(v) for v in read[4:8]] == expect

    doc = json.loads(ok("inspect", *sw, "--json", "--job", "1"))
    assert doc["occupancy"] == [{"job_id": 1, "copies": 4, "idle": 3, "busy": 0, "complete": 1}]
    assert doc["counters"]["innet_contributions"] == {"1": 2} and doc["counters"]["innet_completions"] == {"1": 1}
    table = ok("inspect", *sw, "--register", "innet_count", "--range", "4:6")
    assert "slot copies" in table and "complete" in table and "MyIngress.innet_count" in table

    assert ok("job", "destroy", *sw, "--job", "1").strip() == f"job 1 destroyed on {address}"
    doc = json.loads(ok("inspect", *sw, "--json", "--register", "innet_count", "--register", "innet_acc_0",
                        "--register", "innet_bitmap", "--register", "innet_param_1"))
    assert doc["jobs"] == [] and all(set(r["values"]) == {0} for r in doc["registers"])
    assert all(set(cells.values()) <= {0} for cells in doc["counters"].values())
    assert ok("job", "list", *sw).strip() == "no jobs"


@pytest.mark.slow
def test_errors(switch):
    address, _ = switch
    sw = ["--switch", address]
    result = innet("inspect", *sw)
    assert result.returncode == 1 and "has no pipeline; push one first" in result.stderr
    ok("pipeline", "push", *sw, str(INNET), "-D", "INNET_K=4", "-D", "INNET_SLOTS=8", "-D", "INNET_PARAM_CHUNKS=8")
    result = innet("inspect", *sw, "--register", "innet_parm_0")
    assert result.returncode == 1
    assert "no register named 'innet_parm_0' in the P4Info. Did you mean 'MyIngress.innet_param_0'" in result.stderr
    result = innet("job", "create", *sw, "--job", "1", "-k", "64", "--worker", "0,1,00:00:00:00:00:01,10.0.0.1,6000")
    assert result.returncode == 1 and "k=64 but the pipeline has INNET_K=4" in result.stderr
    result = innet("job", "destroy", *sw, "--job", "3")
    assert result.returncode == 1 and "job 3 is not installed on any switch" in result.stderr

    # another controller holds the default role with a higher election id: writes with an
    # explicit (default-role) election id are refused, reads (inspect) still work, and writes
    # without one (role innet-cli, a fresh id) work beside it
    with Switch(SwitchEndpoint("primary", address, election_id=100)) as primary:
        assert primary.is_primary
        job = ["--job", "1", "-k", "4", "--slot-count", "2", "--worker", "0,1,00:00:00:00:00:01,10.0.0.1,6000"]
        result = innet("job", "create", *sw, "--election-id", "2", *job)
        assert result.returncode == 1 and "not the primary controller" in result.stderr
        assert json.loads(ok("inspect", *sw, "--json"))["jobs"] == []
        assert ok("job", "create", *sw, *job).strip() == f"job 1 on {address}: chunks 0+0"
        assert primary.is_primary


def test_unreachable_switch_is_a_clear_error_within_the_deadline():
    with socket.socket() as s:  # listens but never speaks gRPC (refused addresses: test_live_testbed)
        s.bind(("127.0.0.1", 0))
        s.listen()
        address = f"127.0.0.1:{s.getsockname()[1]}"
        start = time.monotonic()
        result = innet("inspect", "--switch", address, "--timeout", "1", timeout=30)
    assert result.returncode == 1
    assert f"switch {address}: no gRPC connection within 1 s" in result.stderr
    assert time.monotonic() - start < 15


def user(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user types it: the installed ``innet`` script."""
    return subprocess.run([str(Path(sys.executable).with_name("innet")), *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


@pytest.mark.slow
def test_defaults_and_messages_a_user_sees(switch, tmp_path):
    address, _ = switch
    sw = ["--switch", address]
    worker = "0,1,00:00:00:00:00:01,10.0.0.1,6000"
    ok("pipeline", "push", *sw, str(ROOT / "p4" / "examples" / "basic_forward.p4"))
    result = user("job", "list", *sw)  # another program: say so, suggest none of its tables
    assert result.returncode == 1 and result.stderr.startswith("innet job list: error: the pipeline is not innet.p4: ")
    assert "Did you mean" not in result.stderr and len(result.stderr.splitlines()) == 1

    ok("pipeline", "push", *sw, str(INNET), "-D", "INNET_K=4", "-D", "INNET_SLOTS=8", "-D", "INNET_PARAM_CHUNKS=16",
       "-D", "INNET_MAX_JOBS=4")
    result = user("job", "create", *sw, "--job", "1", "--worker", worker)  # no -k: the pipeline's K=4
    assert (result.returncode, result.stdout.strip()) == (0, f"job 1 on {address}: chunks 0+0"), result.stderr
    result = user("params", "read", *sw, "--job", "1")  # a sum job has no parameters
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.strip() == ("innet params read: error: job 1 holds no parameters on the switch (a sum job, or "
                                     "--param-chunks 0): nothing to read")
    ok("job", "destroy", *sw, "--job", "1")

    ok("job", "create", *sw, "--job", "2", "--worker", worker, "--mode", "sgd", "--lr", "0.5", "--param-chunks", "3")
    np.save(tmp_path / "w.npy", np.arange(10, dtype=np.int32))
    result = user("params", "load", *sw, "--job", "2", str(tmp_path / "w.npy"))
    assert result.returncode == 0 and result.stdout.strip() == (
        "loaded 10 parameters (int32) into job 2: 3 chunks of K=4, the last 2 values zero "
        "(params read --size 10 returns exactly these)")
    result = user("params", "read", *sw, "--job", "2", "--raw")
    assert result.returncode == 0 and result.stdout.split() == [str(v) for v in range(10)] + ["0", "0"]
    assert result.stderr.strip() == "(12 values: every chunk of the job; --size N for the first N)"
    result = user("params", "read", *sw, "--job", "2", "--raw", "--size", "10")
    assert result.stdout.split() == [str(v) for v in range(10)] and result.stderr == ""

    result = user("inspect", *sw, "--register", "innet_param_0")  # piped: every cell whole
    assert result.returncode == 0 and "\u2026" not in result.stdout and "MyIngress.innet_param_0" in result.stdout

    result = user("inspect", *sw, "--register", "innet_count", "--range", "5:2")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines()[-1] == ("innet inspect: error: argument --range: '5:2' is empty: "
                                                      "A:B means indices A..B-1, so B must exceed A")
