"""innet.switch.p4runtime.client against SwitchServer (fake target) on loopback."""

from __future__ import annotations

import grpc
import pytest
from finsy.proto import p4r

from innet.switch.p4runtime.client import P4Names, P4RuntimeClient, P4RuntimeClientError
from innet.switch.p4runtime.fake import FakeTarget, sample_p4info
from innet.switch.server import SwitchOptions, SwitchServer


@pytest.fixture
def server():
    with SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), FakeTarget(lambda *_: [])) as s:
        yield s


def route(names: P4Names, dst: int, port: int) -> p4r.Update:
    return names.insert("MyIngress.ipv4_lpm", {"hdr.ethernet.etherType": 0x0800,
                                               "hdr.ipv4.dstAddr": (dst, 24)},
                        "MyIngress.forward", {"port": port, "mac": 1})


def test_write_read_and_per_update_errors(server: SwitchServer):
    names = P4Names(sample_p4info())
    with P4RuntimeClient(server.grpc_address) as client:
        client.set_pipeline(names.p4info, b"fake program", cookie=3)
        client.write([route(names, 0x0A000100, 1), route(names, 0x0A000200, 2)])
        table = names.table("MyIngress.ipv4_lpm").preamble.id
        assert len(client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=table)))) == 2
        with pytest.raises(P4RuntimeClientError, match="update 1: ALREADY_EXISTS") as info:
            client.write([route(names, 0x0A000300, 3), route(names, 0x0A000100, 1)])
        assert info.value.code == grpc.StatusCode.UNKNOWN
        assert [(u.index, u.code) for u in info.value.updates] == [(1, "ALREADY_EXISTS")]


def test_backup_client_is_refused_and_names_are_checked(server: SwitchServer):
    names = P4Names(sample_p4info())
    with pytest.raises(KeyError, match="no table named 'MyIngress.ipv4_lmp'"):
        names.table("MyIngress.ipv4_lmp")
    with P4RuntimeClient(server.grpc_address, election_id=10):
        with pytest.raises(P4RuntimeClientError, match="arbitration: PERMISSION_DENIED: not primary"):
            with P4RuntimeClient(server.grpc_address, election_id=2):
                pass


def test_no_server_is_unavailable_within_the_deadline():
    with pytest.raises(P4RuntimeClientError, match="UNAVAILABLE: no P4Runtime server at 127.0.0.1:1"):
        with P4RuntimeClient("127.0.0.1:1", timeout=0.5):
            pass
