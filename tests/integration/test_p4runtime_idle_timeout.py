"""Idle timeout over gRPC on loopback: SwitchServer + InnetTarget running
``tests/data/idle_timeout.p4`` (``support_timeout = true``), frames into a UDP switch port,
``innet.controller.client`` receiving ``IdleTimeoutNotification``s on its StreamChannel
and reading ``time_since_last_hit``."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
from finsy.proto import p4r

from innet.controller.client import P4RuntimeClient
from innet.controller.errors import RpcError
from innet.switch import device_config
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.ports import UdpPortSpec
from innet.switch.server import SwitchOptions, SwitchServer

PROGRAM = Path(__file__).resolve().parents[1] / "data" / "idle_timeout.p4"
KIND = "idle_timeout_notification"
MS = 1_000_000
TTL = 200 * MS


class Env:
    def __init__(self, server: SwitchServer, client: P4RuntimeClient, ids: dict[str, int]) -> None:
        self.server, self.client, self.ids = server, client, ids
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.port1 = server.ports.ports[1].address  # type: ignore[union-attr]

    def insert(self, dst: int, ttl_ns: int) -> None:
        e = p4r.TableEntry(table_id=self.ids["Ing.flows"], idle_timeout_ns=ttl_ns)
        e.match.add(field_id=1).exact.value = bytes([dst])
        e.action.action.action_id = self.ids["Ing.fwd"]
        e.action.action.params.add(param_id=1, value=b"\x02")
        self.client.write([p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=e))])

    def send(self, dst: int) -> None:
        self.sock.sendto(dst.to_bytes(6, "big") + (0xEE).to_bytes(6, "big") + b"\x08\x00data", self.port1)

    def elapsed_ns(self, dst: int) -> int:
        request = p4r.TableEntry(table_id=self.ids["Ing.flows"])
        request.match.add(field_id=1).exact.value = bytes([dst])
        request.time_since_last_hit.SetInParent()
        (found,) = self.client.read([p4r.Entity(table_entry=request)])
        return int(found.table_entry.time_since_last_hit.elapsed_ns)

    def notified(self, timeout: float) -> list[set[int]]:
        """The entries (dst) of every notification that arrives within ``timeout``."""
        out = []
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            message = self.client.next_message(left, kind=KIND)
            if message is None:
                break
            note = message.idle_timeout_notification
            assert note.table_entry and abs(note.timestamp - time.time_ns()) < 60 * 10**9
            out.append({int.from_bytes(e.match[0].exact.value, "big") for e in note.table_entry})
        return out


@pytest.fixture(params=["python", "native"])
def env(request: pytest.FixtureRequest) -> Iterator[Env]:
    built = device_config.build(PROGRAM)
    options = SwitchOptions(grpc_address="127.0.0.1:0", udp_ports=(UdpPortSpec.parse("1@127.0.0.1:0"),),
                            ageing_sweep_interval=0.02)
    with SwitchServer(options, InnetTarget(executor=request.param)) as server, P4RuntimeClient(server.grpc_address) as client:
        client.set_pipeline(built.p4info, built.config.to_bytes())
        ids = {t.preamble.name: t.preamble.id for t in built.p4info.tables}
        ids.update({a.preamble.name: a.preamble.id for a in built.p4info.actions})
        env = Env(server, client, ids)
        yield env
        env.sock.close()


def test_idle_entry_is_notified_and_kept(env: Env) -> None:
    start = time.monotonic()
    env.insert(0x0A, TTL)
    message = env.client.next_message(10, kind=KIND)  # polls with a deadline
    waited = time.monotonic() - start
    assert message is not None, "no IdleTimeoutNotification within 10 s"
    (entry,) = message.idle_timeout_notification.table_entry
    assert entry.match[0].exact.value == b"\x0a" and entry.idle_timeout_ns == TTL
    assert waited >= 0.19  # not before the TTL (the switch's timer starts at the insertion)
    assert env.elapsed_ns(0x0A) >= TTL  # the switch does not delete it: the controller decides


def test_hit_entry_is_not_notified_while_hit(env: Env) -> None:
    env.insert(0x0B, TTL)  # hit every 40 ms
    env.insert(0x0C, TTL)  # never hit: shows that the sweep runs meanwhile
    stop = threading.Event()

    def traffic() -> None:
        while not stop.is_set():
            env.send(0x0B)
            stop.wait(0.04)

    sender = threading.Thread(target=traffic)
    sender.start()
    try:
        during = env.notified(1.2)
    finally:
        stop.set()
        sender.join()
    assert during and all(entries == {0x0C} for entries in during), during
    assert env.elapsed_ns(0x0B) < TTL
    deadline = time.monotonic() + 10
    while not any(0x0B in entries for entries in env.notified(0.5)):  # idle now: reported
        assert time.monotonic() < deadline, "the entry was not reported after the traffic stopped"


def test_time_since_last_hit_follows_the_hits(env: Env) -> None:
    env.insert(0x0D, 0)  # TTL 0: never notified, elapsed still reported
    time.sleep(0.1)
    before = env.elapsed_ns(0x0D)
    assert before >= 100 * MS
    env.send(0x0D)
    deadline = time.monotonic() + 10
    while env.elapsed_ns(0x0D) >= before:  # the frame crosses the UDP port asynchronously
        assert time.monotonic() < deadline, "the hit did not reset time_since_last_hit"
        time.sleep(0.01)
    assert env.notified(0.3) == []


def test_plain_table_refuses_time_since_last_hit(env: Env) -> None:
    request = p4r.TableEntry(table_id=env.ids["Ing.plain"])
    request.time_since_last_hit.SetInParent()
    with pytest.raises(RpcError, match="INVALID_ARGUMENT.*does not support idle timeout"):
        env.client.read([p4r.Entity(table_entry=request)])
