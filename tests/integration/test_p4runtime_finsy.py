"""finsy (a real P4Runtime client) against innet's server, as a subprocess.

The switch runs in this process with the fake target: finsy's default flow
(Capabilities, Get COOKIE_ONLY, SetForwardingPipelineConfig) and ``delete_all()`` only
need P4Runtime behaviour, not a P4 program.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from finsy.proto import p4r
from google.protobuf import text_format

from innet.switch.server import SwitchOptions, SwitchServer

from testkit.fake_target import FakeTarget, sample_p4info

CLIENT = Path(__file__).parent / "clients" / "finsy_client.py"
LPM, FORWARD = 0x02000001, 0x01000001


@pytest.fixture
def switch():
    target = FakeTarget()
    with SwitchServer(SwitchOptions(device_id=1, grpc_address="127.0.0.1:0"), target) as server:
        yield server, target


@pytest.fixture
def program(tmp_path: Path) -> tuple[Path, Path]:
    p4info = tmp_path / "sample.p4info.txtpb"
    p4info.write_text(text_format.MessageToString(sample_p4info()))
    blob = tmp_path / "sample.blob"
    blob.write_bytes(b"fake program")
    return p4info, blob


def finsy(address: str, program: tuple[Path, Path], election_id: int, *actions: str,
          timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CLIENT), address, "1", str(program[0]), str(program[1]),
                           str(election_id), *actions], capture_output=True, text=True, timeout=timeout)


def test_finsy_default_flow_sets_pipeline_and_delete_all_empties_tables(switch, program):
    server, target = switch
    result = finsy(server.grpc_address, program, 10, "primary", "delete_all", "read_tables")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == ["primary True", "delete_all ok", "read_tables 0"]
    assert server.device.has_pipeline
    assert server.device.get_pipeline(p4r.GetForwardingPipelineConfigRequest.ALL).p4_device_config \
        == b"fake program"
    # now install entries behind finsy's back, then delete_all must remove them
    entry = p4r.TableEntry(table_id=LPM)
    entry.match.add(field_id=1).exact.value = b"\x08\x00"
    entry.action.action.action_id = FORWARD
    entry.action.action.params.add(param_id=1, value=b"\x01")
    entry.action.action.params.add(param_id=2, value=b"\x01")
    group = p4r.MulticastGroupEntry(multicast_group_id=3)
    group.replicas.add(port=b"\x01", instance=1)
    results = server.device.write([
        p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=entry)),
        p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(
            packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(multicast_group_entry=group))),
    ])
    assert results == [None, None]
    assert len(target.pipeline.entries) == 1
    result = finsy(server.grpc_address, program, 10, "read_tables", "delete_all", "read_tables")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == ["read_tables 1", "delete_all ok", "read_tables 0"]
    assert target.pipeline.entries == {}
    # finsy 0.30's delete_many() only deletes table entries when the P4Info has a const
    # table (sample_p4info has one), so the multicast group stays: a client limitation.
    assert list(target.pipeline.groups) == [3]
    # the second run found the same cookie and did not reload the pipeline
    assert len(target.loaded) == 1


def test_two_finsy_clients_arbitrate_and_backup_write_is_permission_denied(switch, program):
    server, _ = switch
    holder = subprocess.Popen([sys.executable, str(CLIENT), server.grpc_address, "1", str(program[0]),
                               str(program[1]), "20", "primary", "hold"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "primary True"
        assert holder.stdout.readline().strip() == "holding"
        backup = finsy(server.grpc_address, program, 5, "primary", "delete_all")
        lines = backup.stdout.splitlines()
        assert lines[0] == "primary False"
        assert backup.returncode == 1 and lines[1].startswith("error PERMISSION_DENIED"), lines
    finally:
        holder.communicate("", timeout=30)
    assert holder.returncode == 0
