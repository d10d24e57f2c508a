"""Digest lists over gRPC: batching by max_timeout_ns/max_list_size (the switch's timer
thread), duplicate suppression until DigestListAck, on SwitchServer with the fake target;
read with innet.controller.client (next_message, ack_digest, packet_in beside digests)."""

from __future__ import annotations

import socket
import time

import pytest
from finsy.proto import p4r

from innet.controller import client as client_module
from innet.controller.client import P4RuntimeClient
from innet.switch.p4runtime.target_api import Digest
from innet.switch.ports import UdpPortSpec
from innet.switch.server import SwitchOptions, SwitchServer

from testkit.fake_target import FakeTarget, sample_p4info

DIGEST = 0x17000001
CPU = 255


def learn(pipeline, port: int, data: bytes):
    """Every frame digests (first 6 bytes as MAC, ingress port); frames whose 7th byte is
    b"c" go on to the CPU port (packet_in metadata: ingress port, 9 bits), others are dropped."""
    pipeline.digests.append(Digest("learn_t", (int.from_bytes(data[:6], "big"), port)))
    return [(CPU, (port << 7).to_bytes(2, "big") + data)] if data[6:7] == b"c" else []


@pytest.fixture
def setup():
    options = SwitchOptions(grpc_address="127.0.0.1:0", cpu_port=CPU,
                            udp_ports=(UdpPortSpec.parse("1@127.0.0.1:0"),))
    with SwitchServer(options, FakeTarget(learn)) as server, P4RuntimeClient(server.grpc_address) as client:
        client.set_pipeline(sample_p4info(), b"fake program")
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        address = server.ports.ports[1].address  # type: ignore[union-attr]
        yield client, lambda mac, body=b"frame": sock.sendto(mac.to_bytes(6, "big") + body, address)
        sock.close()


def configure(client: P4RuntimeClient, kind=p4r.Update.INSERT, **config: int) -> None:
    entry = p4r.DigestEntry(digest_id=DIGEST, config=p4r.DigestEntry.Config(**config))
    client.write([p4r.Update(type=kind, entity=p4r.Entity(digest_entry=entry))])


def macs(message: p4r.StreamMessageResponse | None) -> list[int]:
    assert message is not None, "no digest list"
    assert message.WhichOneof("update") == "digest", message
    return [int.from_bytes(d.struct.members[0].bitstring, "big") for d in message.digest.data]


def no_message(client: P4RuntimeClient, seconds: float = 0.3) -> bool:
    return client.next_message(seconds) is None


def test_timeout_batches_and_ack_releases_duplicates(setup):
    client, send = setup
    configure(client, max_timeout_ns=200_000_000, max_list_size=100, ack_timeout_ns=60_000_000_000)
    start = time.monotonic()
    for mac in (1, 2, 3, 2):  # the second 2 is a duplicate of data in the open list
        send(mac)
    first = client.next_message(5)
    assert macs(first) == [1, 2, 3]
    assert time.monotonic() - start >= 0.15  # sent by the timer, not per packet
    send(1)  # sent but not acked: suppressed
    assert no_message(client, 0.5)
    assert first is not None
    client.ack_digest(first.digest)
    deadline = time.monotonic() + 5
    while True:  # resend until the switch has seen the ack (later copies are duplicates)
        send(1)
        second = client.next_message(0.3)
        if second is not None:
            break
        assert time.monotonic() < deadline, "the ack did not release the suppressed data"
    assert macs(second) == [1] and second.digest.list_id > first.digest.list_id


def test_max_list_size_closes_lists_without_waiting(setup):
    client, send = setup
    configure(client, max_timeout_ns=60_000_000_000, max_list_size=2)
    for mac in (10, 11, 12, 13):
        send(mac)
    assert macs(client.next_message(5)) == [10, 11]
    assert macs(client.next_message(5)) == [12, 13]
    send(14)
    assert no_message(client)  # waits for a second digest or a minute
    configure(client, kind=p4r.Update.DELETE)
    send(15)
    assert no_message(client)  # deleted: nothing is reported, the open list is gone


def test_packet_in_leaves_digests_queued_and_next_message_keeps_arrival_order(setup):
    client, send = setup
    configure(client, max_timeout_ns=0, max_list_size=1)
    send(20)  # a digest only
    first = client.next_message(5, "digest")
    assert macs(first) == [20]
    send(21, b"cpu")  # a digest, then a PacketIn
    packet = client.packet_in(5)
    assert packet is not None and packet.payload[6:] == b"cpu"
    assert int.from_bytes(packet.payload[:6], "big") == 21
    assert macs(client.next_message(5)) == [21]  # still there after packet_in took the packet
    send(22, b"cpu")
    send(23, b"cpu")
    kinds = []
    while len(kinds) < 4 and (message := client.next_message(5)) is not None:
        if message.HasField("packet"):
            kinds.append(("packet", int.from_bytes(message.packet.payload[:6], "big")))
        else:
            kinds.extend(("digest", mac) for mac in macs(message))
    assert sorted(kinds) == [("digest", 22), ("digest", 23), ("packet", 22), ("packet", 23)]
    assert kinds.index(("digest", 22)) < kinds.index(("digest", 23))
    assert kinds.index(("packet", 22)) < kinds.index(("packet", 23))
    assert client.packet_in(0.2) is None and no_message(client)


def test_untaken_messages_are_bounded_oldest_dropped_first(setup, monkeypatch):
    client, send = setup
    monkeypatch.setattr(client_module, "MAX_PENDING_MESSAGES", 2)
    configure(client, max_timeout_ns=0, max_list_size=1)
    for mac in (30, 31, 32):
        send(mac)
    deadline = time.monotonic() + 5
    while client.dropped_messages < 1:
        assert time.monotonic() < deadline, "the third digest list did not arrive"
        time.sleep(0.01)
    assert macs(client.next_message(5)) == [31]
    assert macs(client.next_message(5)) == [32]
    assert no_message(client) and client.dropped_messages == 1
