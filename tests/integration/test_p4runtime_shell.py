"""p4runtime-shell (pins p4runtime 1.4.1 / protobuf<3.21) against innet's server.

The shell (pinned) lives in its own venv in the user's cache, created on first use by the
``shell_python`` session fixture (tests/integration/conftest.py, testkit.p4rt_shell); a
pip failure is reported as a test error naming the command. The switch runs in this process
with the fake target: this pins wire compatibility with the shell's flow (election id
(1,0), VERIFY_AND_COMMIT, Get P4INFO_AND_COOKIE, Write errors, PRE, PacketOut).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format

from innet.switch.server import SwitchOptions, SwitchServer

from testkit.fake_target import FakeTarget, sample_p4info

CLIENT = Path(__file__).parent / "clients" / "p4rt_shell_client.py"
CPU = 255


def route(pipeline, port: int, data: bytes):
    if port == CPU:  # PacketOut: 9-bit egress_port + 7 pad bits in front
        return [(int.from_bytes(data[:2], "big") >> 7, data[2:])]
    return []


def test_p4runtime_shell_session(shell_python: Path, tmp_path: Path):
    p4info = tmp_path / "sample.p4info.txtpb"
    p4info.write_text(text_format.MessageToString(sample_p4info()))
    blob = tmp_path / "sample.blob"
    blob.write_bytes(b"fake program")
    spec = {
        "match": {"hdr.ethernet.etherType": "0x0800", "hdr.ipv4.dstAddr": "10.0.1.0/24"},
        "params": {"port": "3", "mac": "00:00:00:00:00:01"},
        "group": {"id": 7, "replicas": [[1, 1], [2, 1]]},
        "packet_out": {"payload_hex": "c0ffee", "metadata": {"egress_port": "2"}},
    }
    target = FakeTarget(route)
    options = SwitchOptions(device_id=1, grpc_address="127.0.0.1:0", cpu_port=CPU)
    with SwitchServer(options, target) as server:
        result = subprocess.run(
            [str(shell_python), str(CLIENT), server.grpc_address, "1", str(p4info), str(blob),
             "MyIngress.ipv4_lpm", "MyIngress.forward", json.dumps(spec)],
            capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        out = json.loads(result.stdout.strip().splitlines()[-1])
        pipeline = target.pipeline
    assert out["entries"] == 1
    assert "MyIngress.forward" in out["read"][0] and "prefix_len: 24" in out["read"][0]
    assert len(out["groups"]) == 1 and "7" in out["groups"][0]
    assert "ALREADY_EXISTS" in out["duplicate_insert"] and "index 0" in out["duplicate_insert"]
    (table, key, priority, action), = pipeline.entries.values()
    assert (table, action.action, action.args) == ("MyIngress.ipv4_lpm", "MyIngress.forward", (3, 1))
    assert [(r.port, r.instance) for r in pipeline.groups[7]] == [(1, 1), (2, 1)]
    assert pipeline.processed[-1] == (CPU, b"\x01\x00" + bytes.fromhex("c0ffee"))
