"""Write atomicity: ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC are all-or-none (the failed
update carries its error, the others ABORTED), and no packet sees a half-applied batch."""

from __future__ import annotations

import threading

import grpc
import pytest
from finsy.proto import p4d, p4r

from innet.switch.p4runtime.device import Device

from testkit.fake_target import FakeTarget, sample_p4info

Set = p4r.SetForwardingPipelineConfigRequest
LPM, FORWARD, DROP = 0x02000001, 0x01000001, 0x01000002
REGISTER = 0x16000001
INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE
ALL_OR_NONE = [p4r.WriteRequest.ROLLBACK_ON_ERROR, p4r.WriteRequest.DATAPLANE_ATOMIC]


@pytest.fixture
def device() -> Device:
    d = Device(1, FakeTarget(), cpu_port=255)
    d.set_pipeline(Set.VERIFY_AND_COMMIT, p4r.ForwardingPipelineConfig(
        p4info=sample_p4info(), p4_device_config=b"prog"))
    return d


def entry(net: int, port: int = 1, action: int = FORWARD) -> p4r.Entity:
    e = p4r.TableEntry(table_id=LPM)
    e.match.add(field_id=1).exact.value = b"\x08\x00"
    m = e.match.add(field_id=2)
    m.lpm.value, m.lpm.prefix_len = bytes([10, 0, net, 0]), 24
    e.action.action.action_id = action
    if action == FORWARD:
        e.action.action.params.add(param_id=1, value=bytes([port]))
        e.action.action.params.add(param_id=2, value=b"\x01")
    return p4r.Entity(table_entry=e)


def register(index: int, value: int) -> p4r.Entity:
    r = p4r.RegisterEntry(register_id=REGISTER, data=p4d.P4Data(bitstring=bytes([value])))
    r.index.index = index
    return p4r.Entity(register_entry=r)


def group(gid: int, *ports: int) -> p4r.Entity:
    g = p4r.MulticastGroupEntry(multicast_group_id=gid)
    for port in ports:
        g.replicas.add(egress_port=port, instance=1)
    return p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(multicast_group_entry=g))


def up(kind: int, entity: p4r.Entity) -> p4r.Update:
    return p4r.Update(type=kind, entity=entity)


def state(device: Device) -> list[p4r.Entity]:
    """Everything a controller can read back, to compare before/after."""
    return device.read([p4r.Entity(table_entry=p4r.TableEntry()),
                        p4r.Entity(register_entry=p4r.RegisterEntry(register_id=REGISTER)),
                        group(0)])


@pytest.mark.parametrize("atomicity", ALL_OR_NONE)
def test_a_failed_update_undoes_the_batch(device: Device, atomicity: int) -> None:
    assert device.write([up(INSERT, entry(1, port=1)), up(INSERT, entry(2)), up(MODIFY, register(3, 7)),
                         up(INSERT, group(5, 1, 2))]) == [None] * 4
    before = state(device)
    batch = [
        up(INSERT, entry(3)),             # new entry
        up(MODIFY, entry(1, port=9)),     # changed action
        up(DELETE, entry(2)),             # removed entry
        up(MODIFY, register(3, 200)),     # changed cell
        up(MODIFY, group(5, 3)),          # changed group
        up(DELETE, group(5)),             # and then removed
        up(INSERT, entry(1)),             # fails: exists
        up(INSERT, entry(4)),             # never tried
    ]
    results = device.write(batch, atomicity)
    assert results[6] is not None and results[6].code == grpc.StatusCode.ALREADY_EXISTS
    others = [r for i, r in enumerate(results) if i != 6]
    assert all(r is not None and r.code == grpc.StatusCode.ABORTED for r in others)
    assert others[0] is not None and others[0].message == (
        "not applied: update 6 failed and the batch was rolled back")
    assert state(device) == before


@pytest.mark.parametrize("atomicity", ALL_OR_NONE)
def test_a_good_batch_is_applied(device: Device, atomicity: int) -> None:
    assert device.write([up(INSERT, entry(1)), up(MODIFY, register(0, 5))], atomicity) == [None, None]
    assert len(device.read([p4r.Entity(table_entry=p4r.TableEntry(table_id=LPM))])) == 1


def test_default_entry_is_restored(device: Device) -> None:
    default = entry(0, action=DROP)
    default.table_entry.ClearField("match")
    default.table_entry.is_default_action = True
    selector = p4r.Entity(table_entry=p4r.TableEntry(table_id=LPM, is_default_action=True))
    before = device.read([selector])
    results = device.write([up(MODIFY, default), up(DELETE, entry(9))], p4r.WriteRequest.ROLLBACK_ON_ERROR)
    assert results[1] is not None and results[1].code == grpc.StatusCode.NOT_FOUND
    assert device.read([selector]) == before


def test_continue_on_error_still_applies_the_rest(device: Device) -> None:
    results = device.write([up(DELETE, entry(9)), up(INSERT, entry(1))])
    assert results[0] is not None and results[1] is None


def test_no_packet_sees_half_a_dataplane_atomic_batch(device: Device) -> None:
    """A packet arriving while the batch is being applied waits for all of it."""
    pipeline = device.target.pipeline  # type: ignore[attr-defined]
    seen: list[int] = []
    pipeline.packet_function = lambda pl, port, data: seen.append(len(pl.entries)) or []
    started = threading.Event()
    real_insert = pipeline.table_insert
    packet = threading.Thread(target=device.process, args=(1, b"x"))

    def insert(*args):  # the first insert starts a packet, which must wait for the batch
        if not started.is_set():
            started.set()
            packet.start()
            packet.join(0.2)
            assert packet.is_alive(), "a packet was processed in the middle of the batch"
        return real_insert(*args)

    pipeline.table_insert = insert
    assert device.write([up(INSERT, entry(1)), up(INSERT, entry(2))], p4r.WriteRequest.DATAPLANE_ATOMIC) == [None, None]
    packet.join(5)
    assert seen == [2]
