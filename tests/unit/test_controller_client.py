"""innet.controller.client: arbitration, errors wrapped once, deadlines; against the
in-process P4Runtime server (innet's executor, gRPC on port 0)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import grpc
import pytest
from finsy.proto import p4r

from innet.controller import client as client_module
from innet.controller.client import P4RuntimeClient
from innet.controller.entities import Lpm, TableEntry, insert
from innet.controller.errors import (
    ControllerError,
    NoPipelineError,
    NotPrimaryError,
    PipelineConfigError,
    RpcError,
    SwitchUnreachableError,
    WriteError,
)
from innet.controller.pipeline import PipelineConfig
from innet.controller.schema import P4Schema
from innet.controller.switch import Switch, SwitchEndpoint
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.server import SwitchOptions, SwitchServer
from innet.testbed.core.freeport import free_port

from testkit.fake_target import FakeTarget, sample_p4info

PIO = Path(__file__).parents[1] / "integration" / "clients" / "innet_pio.p4"


@pytest.fixture(scope="module")
def config() -> PipelineConfig:
    return PipelineConfig.from_p4(PIO)


@pytest.fixture
def server():
    with SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), InnetTarget()) as s:
        yield s


def test_primary_and_backup(server, config):
    with Switch(SwitchEndpoint("a", server.grpc_address, election_id=10)) as primary, \
            Switch(SwitchEndpoint("b", server.grpc_address, election_id=5)) as backup:
        assert primary.is_primary and not backup.is_primary
        primary.push(config)
        with pytest.raises(NotPrimaryError, match=r"PERMISSION_DENIED.*not the primary controller"):
            backup.push(config)
        with pytest.raises(NotPrimaryError, match="not the primary"):
            backup.insert([TableEntry("dmac", {"dstAddr": 1}, "drop")])
        assert backup.read_table("dmac") == []  # reads are allowed to a backup, schema fetched


def test_read_only_session_refuses_writes_without_arbitrating(server, config):
    with Switch(SwitchEndpoint("a", server.grpc_address)) as sw:
        sw.push(config)
        sw.write_register("seen", 0, [7])
        # a second controller with the same election id would break the primary's stream;
        # a read-only session does not arbitrate at all
        with Switch(SwitchEndpoint("ro", server.grpc_address, election_id=None)) as ro:
            assert ro.read_register("seen", range(0, 1)) == [7]
            with pytest.raises(NotPrimaryError, match="read-only"):
                ro.write_register("seen", 0, [1])
        sw.write_register("seen", 0, [8])  # the primary is still primary


def test_no_pipeline(server):
    with Switch(SwitchEndpoint("a", server.grpc_address)) as sw:
        with pytest.raises(NoPipelineError, match="has no pipeline; push one first"):
            sw.read_register("seen")
        with pytest.raises(NoPipelineError, match="FAILED_PRECONDITION"):
            sw.client.read([p4r.Entity(table_entry=p4r.TableEntry())])


def test_unreachable_switch_fails_within_the_deadline():
    address = f"127.0.0.1:{free_port()}"
    start = time.monotonic()
    with pytest.raises(SwitchUnreachableError, match=rf"switch {address}: no gRPC connection within 0.5 s"):
        Switch(SwitchEndpoint("gone", address, timeout=0.5)).connect()
    assert time.monotonic() - start < 3


def test_silent_listener_fails_within_the_deadline():
    with socket.socket() as s:  # accepts TCP, never speaks HTTP/2
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        address = f"127.0.0.1:{s.getsockname()[1]}"
        start = time.monotonic()
        with pytest.raises(SwitchUnreachableError):
            P4RuntimeClient(address, timeout=0.5).connect()
        assert time.monotonic() - start < 3


def test_batches_are_cut_and_failures_keep_their_global_index(server, config, monkeypatch):
    monkeypatch.setattr(client_module, "MAX_WRITE_UPDATES", 2)
    with Switch(SwitchEndpoint("a", server.grpc_address)) as sw:
        sw.push(config)
        sw.insert([TableEntry("dmac", {"dstAddr": 3}, "drop")])
        entries = [TableEntry("dmac", {"dstAddr": i}, "drop") for i in range(6)]
        with pytest.raises(WriteError) as info:
            sw.insert(entries + [entries[0]])
        assert [f.index for f in info.value.failures] == [3, 6]
        assert info.value.total == 7
        assert len(sw.read_table("dmac")) == 6


def test_duplicate_election_id_is_refused(server):
    with P4RuntimeClient(server.grpc_address, election_id=3, timeout=5):
        with pytest.raises(RpcError, match="arbitration of device 1 with election id 3.*INVALID_ARGUMENT"):
            P4RuntimeClient(server.grpc_address, election_id=3, timeout=5).connect()


def test_wrong_device_id(server):
    with pytest.raises(RpcError, match="arbitration of device 9"):
        P4RuntimeClient(server.grpc_address, device_id=9, timeout=5).connect()


def test_pipeline_sources(tmp_path, config):
    with pytest.raises(PipelineConfigError, match="no P4Info"):
        PipelineConfig.load(tmp_path)
    with pytest.raises(PipelineConfigError, match="no such file"):
        PipelineConfig.load(tmp_path / "x.p4")
    bad = tmp_path / "bad.p4"
    bad.write_text("control C() { apply { x = ; } }\n")
    with pytest.raises(PipelineConfigError, match=r"bad.p4' does not compile"):
        PipelineConfig.load(bad)
    from innet.switch.cli.p4c import main as p4c

    out = tmp_path / "build"
    assert p4c([str(PIO), "-o", str(out)]) == 0
    loaded = PipelineConfig.load(out)
    assert loaded.name == "innet_pio" and loaded.p4info == config.p4info and loaded.cookie == config.cookie


# -- the fake target with sample_p4info (formerly innet.switch.p4runtime.client's tests) --


@pytest.fixture
def fake_server():
    with SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), FakeTarget(lambda *_: [])) as s:
        yield s


def route(schema: P4Schema, dst: int, port: int) -> p4r.Update:
    return insert(schema, TableEntry("MyIngress.ipv4_lpm", {"hdr.ethernet.etherType": 0x0800,
                                                            "hdr.ipv4.dstAddr": Lpm(dst, 24)},
                                     "MyIngress.forward", {"port": port, "mac": 1}))


def test_write_read_and_per_update_errors(fake_server):
    schema = P4Schema(sample_p4info())
    with P4RuntimeClient(fake_server.grpc_address) as client:
        client.set_pipeline(schema.p4info, b"fake program", cookie=3)
        assert client.get_p4info() == schema.p4info
        client.write([route(schema, 0x0A000100, 1), route(schema, 0x0A000200, 2)])
        table = schema.table("MyIngress.ipv4_lpm").id
        assert len(client.read([p4r.Entity(table_entry=p4r.TableEntry(table_id=table))])) == 2
        with pytest.raises(WriteError, match=r"update 1 \(table_entry table_id \d+\): ALREADY_EXISTS") as info:
            client.write([route(schema, 0x0A000300, 3), route(schema, 0x0A000100, 1)])
        assert info.value.code == grpc.StatusCode.UNKNOWN
        assert [(f.index, f.code) for f in info.value.failures] == [(1, grpc.StatusCode.ALREADY_EXISTS)]


def test_backup_is_refused_writes_and_follows_arbitration_notices(fake_server):
    schema = P4Schema(sample_p4info())
    with pytest.raises(KeyError, match="no table named 'MyIngress.ipv4_lmp'"):
        schema.table("MyIngress.ipv4_lmp")
    with P4RuntimeClient(fake_server.grpc_address, election_id=5) as old:
        old.set_pipeline(schema.p4info, b"fake program")
        with P4RuntimeClient(fake_server.grpc_address, election_id=2) as backup:
            assert old.is_primary and not backup.is_primary
            with pytest.raises(NotPrimaryError, match="PERMISSION_DENIED.*not the primary controller"):
                backup.write([route(schema, 0x0A000100, 1)])
            assert backup.next_message(0.2) is None  # its own arbitration reply was taken by connect
        newcomer = P4RuntimeClient(fake_server.grpc_address, election_id=10).connect()
        try:
            assert newcomer.is_primary
            notice = old.next_message(5, "arbitration")  # the primary changed: old is told so
            assert notice is not None and notice.arbitration.status.code == grpc.StatusCode.ALREADY_EXISTS.value[0]
            assert not old.is_primary
            with pytest.raises(NotPrimaryError):
                old.write([route(schema, 0x0A000100, 1)])
            newcomer.write([route(schema, 0x0A000100, 1)])
        finally:
            newcomer.close()
        notice = old.next_message(5)  # the primary left: nobody is primary now
        assert notice is not None and notice.arbitration.status.code == grpc.StatusCode.NOT_FOUND.value[0]
        assert not old.is_primary


def test_stream_needs_a_connected_arbitrating_session(fake_server):
    client = P4RuntimeClient(fake_server.grpc_address)
    with pytest.raises(ControllerError, match="no StreamChannel: the client is not connected"):
        client.next_message(0)
    with P4RuntimeClient(fake_server.grpc_address, election_id=None) as ro:
        with pytest.raises(ControllerError, match="no StreamChannel: this session is read-only"):
            ro.packet_out(b"x")


def test_stream_failure_is_raised_by_next_message():
    server = SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), FakeTarget())
    with server, P4RuntimeClient(server.grpc_address, timeout=2) as client:
        server.stop()
        with pytest.raises((SwitchUnreachableError, RpcError), match="StreamChannel"):
            while client.next_message(5) is not None:
                pass
