"""Packet replication engine ids, ports and instances the v1model program can address
(group ids above bit<16> would be accepted and never selectable)."""

import re

import grpc
import pytest
from finsy.proto import p4r

from innet.switch.p4runtime.device import Device

from testkit.fake_target import FakeTarget, sample_p4info

INSERT, DELETE = p4r.Update.INSERT, p4r.Update.DELETE


@pytest.fixture
def device() -> Device:
    d = Device(1, FakeTarget())
    d.set_pipeline(p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                   p4r.ForwardingPipelineConfig(p4info=sample_p4info(), p4_device_config=b"prog"))
    return d


def group(gid: int, *replicas: tuple[int, int]) -> p4r.PacketReplicationEngineEntry:
    g = p4r.MulticastGroupEntry(multicast_group_id=gid)
    for port, instance in replicas:
        g.replicas.add(egress_port=port, instance=instance)
    return p4r.PacketReplicationEngineEntry(multicast_group_entry=g)


def session(sid: int, *replicas: tuple[int, int]) -> p4r.PacketReplicationEngineEntry:
    s = p4r.CloneSessionEntry(session_id=sid)
    for port, instance in replicas:
        s.replicas.add(port=port.to_bytes(2, "big"), instance=instance)
    return p4r.PacketReplicationEngineEntry(clone_session_entry=s)


def write(device: Device, pre: p4r.PacketReplicationEngineEntry, kind: int = INSERT):
    return device.write([p4r.Update(type=kind, entity=p4r.Entity(packet_replication_engine_entry=pre))])[0]


@pytest.mark.parametrize("pre,code,message", [
    (group(65536, (1, 1)), grpc.StatusCode.OUT_OF_RANGE,
     r"multicast group 65536: id is outside 1..65535 \(mcast_grp is bit<16>\)"),
    (group(0, (1, 1)), grpc.StatusCode.INVALID_ARGUMENT, r"multicast group id 0 is reserved"),
    (group(7, (512, 1)), grpc.StatusCode.OUT_OF_RANGE,
     r"multicast group 7: replica port 512 is outside 0..511 \(ports are bit<9>\)"),
    (group(7, (511, 1)), grpc.StatusCode.INVALID_ARGUMENT, r"multicast group 7: replica port 511 is the drop port"),
    (group(7, (1, 65536)), grpc.StatusCode.OUT_OF_RANGE,
     r"multicast group 7: replica instance 65536 is outside 0..65535 \(egress_rid is bit<16>\)"),
    (session(32768, (1, 0)), grpc.StatusCode.OUT_OF_RANGE, r"clone session 32768: id is outside 1..32767"),
    (session(5, (600, 0)), grpc.StatusCode.OUT_OF_RANGE, r"clone session 5: replica port 600 is outside 0..511"),
    (session(5, (1, 1 << 20)), grpc.StatusCode.OUT_OF_RANGE, r"clone session 5: replica instance 1048576"),
])
def test_out_of_range_pre_entries_are_refused(device: Device, pre, code, message):
    result = write(device, pre)
    assert result is not None and result.code == code
    assert re.search(message, result.message), result.message


def test_delete_beyond_range_is_out_of_range_not_not_found(device: Device):
    result = write(device, group(1 << 20), DELETE)
    assert result is not None and result.code == grpc.StatusCode.OUT_OF_RANGE


def test_limits_themselves_are_accepted(device: Device):
    assert write(device, group(65535, (510, 65535), (0, 0))) is None
    assert write(device, session(32767, (510, 0))) is None
