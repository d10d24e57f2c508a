"""Digest lists over gRPC: batching by max_timeout_ns/max_list_size (the switch's timer
thread), duplicate suppression until DigestListAck, on SwitchServer with the fake target."""

from __future__ import annotations

import socket
import time

import pytest
from finsy.proto import p4r

from innet.switch.p4runtime.client import P4RuntimeClient
from innet.switch.p4runtime.fake import FakeTarget, sample_p4info
from innet.switch.p4runtime.target import Digest
from innet.switch.ports import UdpPortSpec
from innet.switch.server import SwitchOptions, SwitchServer

DIGEST = 0x17000001


def learn(pipeline, port: int, data: bytes):
    """Every frame digests (first 6 bytes as MAC, ingress port) and is dropped."""
    pipeline.digests.append(Digest("learn_t", (int.from_bytes(data[:6], "big"), port)))
    return []


@pytest.fixture
def setup():
    options = SwitchOptions(grpc_address="127.0.0.1:0", udp_ports=(UdpPortSpec.parse("1@127.0.0.1:0"),))
    with SwitchServer(options, FakeTarget(learn)) as server, P4RuntimeClient(server.grpc_address) as client:
        client.set_pipeline(sample_p4info(), b"fake program")
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        address = server.ports.ports[1].address  # type: ignore[union-attr]
        yield client, lambda mac: sock.sendto(mac.to_bytes(6, "big") + b"frame", address)
        sock.close()


def configure(client: P4RuntimeClient, kind=p4r.Update.INSERT, **config: int) -> None:
    entry = p4r.DigestEntry(digest_id=DIGEST, config=p4r.DigestEntry.Config(**config))
    client.write([p4r.Update(type=kind, entity=p4r.Entity(digest_entry=entry))])


def macs(message: p4r.StreamMessageResponse) -> list[int]:
    assert message.WhichOneof("update") == "digest", message
    return [int.from_bytes(d.struct.members[0].bitstring, "big") for d in message.digest.data]


def no_message(client: P4RuntimeClient, seconds: float = 0.3) -> bool:
    try:
        client.next_message(seconds)
    except TimeoutError:
        return True
    return False


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
    client.send(p4r.StreamMessageRequest(digest_ack=p4r.DigestListAck(digest_id=DIGEST,
                                                                      list_id=first.digest.list_id)))
    deadline = time.monotonic() + 5
    while True:  # resend until the switch has seen the ack (later copies are duplicates)
        send(1)
        try:
            second = client.next_message(0.3)
            break
        except TimeoutError:
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
