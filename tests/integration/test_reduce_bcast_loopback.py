"""A LuWu-shaped round through ``innet-switch`` (the process, loopback UDP ports, P4Runtime):
``innet pipeline push`` of p4/innet.p4 at K = 256 (1090-byte frames, a 1500 MTU), ``innet
job create --owner`` for 4 workers and 2 owners, ``innet job attach``; then agent processes
run two steps of reduce-to (workers' gradients -> each chunk's owner) and broadcast (owners'
parameters -> every worker). Results are exact, and the bytes each member sent and received
are read from the switch's own per-port captures (``--pcap``): per worker per step one
vector up and one down plus one header-only frame per chunk each way; per owner its shard
only."""

from __future__ import annotations

import re
import signal
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from innet import wire
from innet.host.agent.agent import Agent, AgentConfig
from innet.wire.owners import OwnerRange
from innet.host.agent.aggregator import JobConfig, Timing
from innet.host.agent.transport import TunnelTransportConfig

ROOT = Path(__file__).parents[2]
K, N, SIZE, STEPS, WINDOW = 256, 4, 10_000, 2, 32
CHUNKS = -(-SIZE // K)  # 40: chunk 39 holds 16 values
OWNERS = (OwnerRange(4, 0, 20), OwnerRange(5, 20, 20))
SWITCH = wire.Endpoint("00:00:00:00:00:fe", "10.0.0.254")
FULL = wire.FRAME_OVERHEAD + wire.message_len(K)  # 1090
HEADER_ONLY = wire.FRAME_OVERHEAD + wire.HEADER_LEN  # 66
PREFIX = "innet-switch: P4Runtime listening on "


def member(rank: int) -> wire.Endpoint:
    return wire.Endpoint(f"00:00:00:00:00:{rank + 1:02x}", f"10.0.0.{rank + 1}", 6000 + rank)


def innet(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "innet.cli", *args], capture_output=True, text=True,
                            timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return result.stdout


def pcap_bytes(path: Path) -> tuple[int, int]:
    """(frames, bytes) recorded in a pcap file (original lengths)."""
    data = path.read_bytes()
    at, frames, total = 24, 0, 0
    while at + 16 <= len(data):
        _, _, caplen, length = struct.unpack_from("<IIII", data, at)
        at += 16 + caplen
        frames += 1
        total += length
    return frames, total


@pytest.fixture
def switch(tmp_path: Path):
    ports = [f"{p}@127.0.0.1:0" for p in range(1, N + len(OWNERS) + 1)]
    cmd = [sys.executable, "-m", "innet.switch.cli.switch", "--no-p4", "--grpc-server-addr", "127.0.0.1:0",
           "--log-level", "warning", "--pcap", str(tmp_path / "pcap"), "--executor", "python"]
    for p in ports:
        cmd += ["-u", p]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith(PREFIX), line
        udp = {}
        for _ in ports:
            words = proc.stdout.readline().split()  # innet-switch: port N on UDP HOST:PORT
            host, port = words[-1].rsplit(":", 1)
            udp[int(words[2])] = (host, int(port))
        yield line[len(PREFIX):], udp, tmp_path / "pcap"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_reduce_to_and_broadcast_round_bytes_on_the_switch_ports(switch) -> None:
    address, udp, pcap = switch
    sw = ["--switch", address]
    innet("pipeline", "push", *sw, str(ROOT / "p4" / "innet.p4"), "-D", f"INNET_K={K}", "-D", "INNET_SLOTS=64",
          "-D", "INNET_PARAM_CHUNKS=16", "-D", "INNET_MAX_JOBS=4")
    workers = [f"{r},{r + 1},{member(r).mac},{member(r).ip},{member(r).port}" for r in range(N)]
    owners = [f"{o.rank},{o.rank + 1},{member(o.rank).mac},{member(o.rank).ip},{member(o.rank).port},"
              f"{o.first_chunk},{o.chunks}" for o in OWNERS]
    out = innet("job", "create", *sw, "--job", "1", "-k", str(K), "--slot-count", str(WINDOW),
                *[a for w in workers for a in ("--worker", w)], *[a for o in owners for a in ("--owner", o)],
                "--switch-ip", SWITCH.ip, "--switch-mac", SWITCH.mac)
    assert "job 1: rank 4 owns chunks 0+20" in out and "job 1: rank 5 owns chunks 20+20" in out
    assert "owners=4:0+20,5:20+20" in innet("job", "list", *sw)
    epoch = int(re.search(r"attached at epoch (\d+)", innet("job", "attach", *sw, "--job", "1")).group(1))

    # RTOs of a second: the python executor at K = 256 on a shared machine takes milliseconds
    # per packet, and a spurious retransmission would blur the byte count (it is allowed for)
    timing = Timing(initial_rto=1.0, min_rto=1.0, max_rto=2.0, chunk_deadline=60)
    configs = [AgentConfig(JobConfig(1, r, N, WINDOW, K, epoch=epoch, owners=OWNERS),
                           TunnelTransportConfig(udp[r + 1], member(r), SWITCH), timing=timing)
               for r in range(N + len(OWNERS))]
    rng = np.random.default_rng(0)
    grads = rng.integers(-2**31, 2**31, (STEPS, N, SIZE), dtype=np.int64).astype(np.int32)
    agents: list[Agent] = []
    results: dict[str, Any] = {}
    try:
        for c in configs:
            agents.append(Agent(c).start())

        def together(calls: dict[str, Callable[[], Any]]) -> None:
            threads = [threading.Thread(target=lambda k=k, f=f: results.__setitem__(k, f())) for k, f in calls.items()]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            assert set(calls) <= set(results), f"no result from {set(calls) - set(results)}"

        for step in range(STEPS):
            together({**{f"r{r}": (lambda r=r: agents[r].reduce_to_int(grads[step, r])) for r in range(N)},
                      **{f"c{o.rank}": (lambda o=o: agents[o.rank].collect_int(SIZE)) for o in OWNERS}})
            total = grads[step].astype(np.int64).sum(axis=0).astype(np.uint32).view(np.int32)
            params = np.zeros(SIZE, np.int32)
            for o in OWNERS:
                part = slice(o.first_chunk * K, min(o.stop * K, SIZE))
                got = results[f"c{o.rank}"]
                assert np.array_equal(got[part], total[part]) and not np.delete(got, np.r_[part]).any()
                params[part] = got[part] // 3 + step  # the owner's "update" of its shard
            together({**{f"b{o.rank}": (lambda o=o: agents[o.rank].broadcast_int(params)) for o in OWNERS},
                      **{f"f{r}": (lambda r=r: agents[r].fetch_int(SIZE)) for r in range(N)}})
            for r in range(N):
                assert np.array_equal(results[f"f{r}"], params), (step, r)
        retrans = {a.config.job.rank: a.last.stats["retransmitted"] for a in agents if a.last}
    finally:
        for a in agents:
            a.close()

    # bytes on the switch's ports: in = sent by the member, out = received by it
    report = []
    for rank in range(N + len(OWNERS)):
        (f_in, b_in), (f_out, b_out) = (pcap_bytes(pcap / f"port{rank + 1}_{d}.pcap") for d in ("in", "out"))
        chunks = CHUNKS if rank < N else next(o.chunks for o in OWNERS if o.rank == rank)
        # per step and chunk: one frame with values and one header-only frame, each way
        want = STEPS * chunks * (FULL + HEADER_ONLY)
        report.append((rank, b_in, b_out, want))
        if retrans[rank] == 0:
            assert (f_in, b_in) == (2 * STEPS * chunks, want), (rank, f_in, b_in)
        else:  # each retransmission adds a frame up and at most one reply down
            assert want <= b_in <= want + retrans[rank] * FULL, (rank, b_in, retrans[rank])
        assert want <= b_out <= want + retrans[rank] * FULL, (rank, b_out, retrans[rank])
    values = 4 * SIZE  # bytes of one vector of int32 values: "4P"
    for rank, b_in, b_out, _ in report:
        who = f"worker {rank}" if rank < N else f"owner {rank}"
        print(f"{who}: {b_in / STEPS:.0f} B up ({b_in / STEPS / values:.3f} x 4P), {b_out / STEPS:.0f} B down "
              f"({b_out / STEPS / values:.3f} x 4P) per step, {retrans[rank]} retransmissions")
