"""Device: pipeline config, entity translation to target calls and errors (fake target)."""

import time

import grpc
import pytest
from finsy.proto import p4d, p4r

from innet.switch.p4runtime.device import Device
from innet.switch.p4runtime.tmp_device_config import wrap_tmp_device_config
from innet.switch.p4runtime.errors import NO_PIPELINE_MESSAGE, P4RuntimeError
from innet.switch.p4runtime.target_api import (
    BoundAction, Digest, ExactMatch, LpmMatch, OptionalMatch, RangeMatch, PreReplica, TernaryMatch,
)

from testkit.fake_target import FakeTarget, sample_p4info

Set = p4r.SetForwardingPipelineConfigRequest
Get = p4r.GetForwardingPipelineConfigRequest
LPM, ACL, FIXED = 0x02000001, 0x02000002, 0x02000003
FORWARD, DROP, NOACTION = 0x01000001, 0x01000002, 21257015
INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE


def config(device_config: bytes = b"prog", cookie: int | None = 7) -> p4r.ForwardingPipelineConfig:
    c = p4r.ForwardingPipelineConfig(p4info=sample_p4info(), p4_device_config=device_config)
    if cookie is not None:
        c.cookie.cookie = cookie
    return c


@pytest.fixture
def device() -> Device:
    d = Device(1, FakeTarget(), cpu_port=255)
    d.set_pipeline(Set.VERIFY_AND_COMMIT, config())
    return d


def lpm_entry(dst: bytes = b"\x0a\x00\x01\x00", plen: int = 24, port: bytes = b"\x01",
              ether: bytes = b"\x08\x00") -> p4r.TableEntry:
    e = p4r.TableEntry(table_id=LPM)
    e.match.add(field_id=1).exact.value = ether
    m = e.match.add(field_id=2)
    m.lpm.value, m.lpm.prefix_len = dst, plen
    a = e.action.action
    a.action_id = FORWARD
    a.params.add(param_id=1, value=port)
    a.params.add(param_id=2, value=b"\x00\x00\x00\x00\x00\x01")
    return e


def up(kind: int, **entity) -> p4r.Update:
    return p4r.Update(type=kind, entity=p4r.Entity(**entity))


def write_one(device: Device, kind: int, **entity) -> P4RuntimeError | None:
    return device.write([up(kind, **entity)])[0]


def pipeline(device: Device):
    return device.target.pipeline  # type: ignore[attr-defined]


def test_no_pipeline_is_failed_precondition():
    d = Device(1, FakeTarget())
    for call in (lambda: d.write([]), lambda: d.read([]), lambda: d.get_pipeline(Get.ALL)):
        with pytest.raises(P4RuntimeError, match=NO_PIPELINE_MESSAGE) as info:
            call()
        assert info.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_get_pipeline_response_types(device: Device):
    assert device.get_pipeline(Get.COOKIE_ONLY) == p4r.ForwardingPipelineConfig(
        cookie=p4r.ForwardingPipelineConfig.Cookie(cookie=7))
    p4i_only = device.get_pipeline(Get.P4INFO_AND_COOKIE)
    assert p4i_only.p4info == sample_p4info() and not p4i_only.p4_device_config
    dev = device.get_pipeline(Get.DEVICE_CONFIG_AND_COOKIE)
    assert dev.p4_device_config == b"prog" and not dev.HasField("p4info")
    assert device.get_pipeline(Get.ALL) == config()


def test_verify_does_not_change_pipeline_and_rejects_bad_config(device: Device):
    device.set_pipeline(Set.VERIFY, config(b"other", cookie=9))
    assert device.get_pipeline(Get.COOKIE_ONLY).cookie.cookie == 7
    with pytest.raises(P4RuntimeError, match="device config rejected") as info:
        device.set_pipeline(Set.VERIFY, config(b"bad"))
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_save_then_commit(device: Device):
    device.set_pipeline(Set.VERIFY_AND_SAVE, config(b"next", cookie=8))
    assert device.get_pipeline(Get.COOKIE_ONLY).cookie.cookie == 7
    device.set_pipeline(Set.COMMIT, p4r.ForwardingPipelineConfig())
    assert device.get_pipeline(Get.ALL).p4_device_config == b"next"
    with pytest.raises(P4RuntimeError, match="no config was saved") as info:
        device.set_pipeline(Set.COMMIT, p4r.ForwardingPipelineConfig())
    assert info.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_tmp_device_config_wrapper_is_removed():
    d = Device(1, FakeTarget())
    # the fake target rejects exactly b"bad": rejection proves the wrapper was removed
    with pytest.raises(P4RuntimeError, match="device config rejected"):
        d.set_pipeline(Set.VERIFY_AND_COMMIT, config(wrap_tmp_device_config(b"bad")))
    wrapped = wrap_tmp_device_config(b"good")
    d.set_pipeline(Set.VERIFY_AND_COMMIT, config(wrapped))
    assert d.get_pipeline(Get.DEVICE_CONFIG_AND_COOKIE).p4_device_config == wrapped


def test_commit_clears_state_reconcile_keeps_it(device: Device):
    assert write_one(device, INSERT, table_entry=lpm_entry()) is None
    device.set_pipeline(Set.RECONCILE_AND_COMMIT, config(b"v2"))
    assert len(device.read([p4r.Entity(table_entry=p4r.TableEntry())])) == 1
    device.set_pipeline(Set.VERIFY_AND_COMMIT, config(b"v3"))
    assert device.read([p4r.Entity(table_entry=p4r.TableEntry())]) == []


def test_insert_passes_target_key_and_action(device: Device):
    assert write_one(device, INSERT, table_entry=lpm_entry(port=b"\x00\x03")) is None
    (table, key, prio, action), = pipeline(device).entries.values()
    assert table == "MyIngress.ipv4_lpm" and prio == 0
    assert key == (ExactMatch(0x0800), LpmMatch(0x0A000100, 24))
    assert action == BoundAction("MyIngress.forward", (3, 1))


def test_read_back_is_canonical(device: Device):
    write_one(device, INSERT, table_entry=lpm_entry(port=b"\x00\x03"))
    (entity,) = device.read([p4r.Entity(table_entry=p4r.TableEntry(table_id=LPM))])
    entry = entity.table_entry
    assert entry.action.action.params[0].value == b"\x03"
    assert entry.action.action.params[1].value == b"\x01"
    assert entry.match[0].exact.value == b"\x08\x00"


def test_insert_existing_is_already_exists_and_missing_is_not_found(device: Device):
    assert write_one(device, INSERT, table_entry=lpm_entry()) is None
    err = write_one(device, INSERT, table_entry=lpm_entry(port=b"\x02"))
    assert err is not None and err.code == grpc.StatusCode.ALREADY_EXISTS
    for kind in (MODIFY, DELETE):
        err = write_one(device, kind, table_entry=lpm_entry(dst=b"\x0b\x00\x00\x00"))
        assert err is not None and err.code == grpc.StatusCode.NOT_FOUND, kind
    assert write_one(device, MODIFY, table_entry=lpm_entry(port=b"\x05")) is None
    (_, _, _, action), = pipeline(device).entries.values()
    assert action.args[0] == 5
    assert write_one(device, DELETE, table_entry=lpm_entry()) is None
    assert pipeline(device).entries == {}


def test_batch_reports_one_result_per_update_in_order(device: Device):
    results = device.write([up(INSERT, table_entry=lpm_entry()),
                            up(INSERT, table_entry=lpm_entry()),
                            up(DELETE, table_entry=lpm_entry())])
    assert results[0] is None and results[2] is None
    assert results[1] is not None and results[1].code == grpc.StatusCode.ALREADY_EXISTS


@pytest.mark.parametrize("mutate, message", [
    (lambda e: e.match[1].lpm.__setattr__("prefix_len", 33), "prefix length 33"),
    (lambda e: e.match[1].lpm.__setattr__("value", b"\x0a\x00\x01\x01"), "beyond the /24 prefix"),
    (lambda e: e.match[0].exact.__setattr__("value", b"\x01\x08\x00"), "does not fit in 16 bits"),
    (lambda e: e.action.action.params[0].__setattr__("value", b"\x02\x00"), "does not fit in 9 bits"),
    (lambda e: e.action.action.params.pop(), "missing parameter"),
    (lambda e: e.action.action.__setattr__("action_id", NOACTION), "@defaultonly"),
    (lambda e: e.__setattr__("priority", 3), "priority must be 0"),
    (lambda e: e.match.pop(0), "exact match field 'hdr.ethernet.etherType' is missing"),
    (lambda e: e.match.add(field_id=9).exact.__setattr__("value", b"\x01"), "no match field with id 9"),
    (lambda e: e.ClearField("action"), "has no action"),
    (lambda e: e.match[0].exact.__setattr__("value", b""), "empty bytestring"),
])
def test_invalid_entries_are_invalid_argument(device: Device, mutate, message):
    entry = lpm_entry()
    mutate(entry)
    err = write_one(device, INSERT, table_entry=entry)
    assert err is not None and err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert message in err.message


def test_padded_and_canonical_values_name_the_same_entry(device: Device):
    write_one(device, INSERT, table_entry=lpm_entry(port=b"\x00\x01"))
    err = write_one(device, INSERT, table_entry=lpm_entry(ether=b"\x08\x00", port=b"\x01"))
    assert err is not None and err.code == grpc.StatusCode.ALREADY_EXISTS


def test_unknown_table_is_not_found(device: Device):
    err = write_one(device, INSERT, table_entry=p4r.TableEntry(table_id=0x02FFFFFF))
    assert err is not None and err.code == grpc.StatusCode.NOT_FOUND


def acl_entry(priority: int = 10) -> p4r.TableEntry:
    e = p4r.TableEntry(table_id=ACL, priority=priority)
    t = e.match.add(field_id=1).ternary
    t.value, t.mask = b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00"
    r = e.match.add(field_id=2).range
    r.low, r.high = b"\x00\x50", b"\x01\x00"
    e.action.action.action_id = DROP
    return e


def test_ternary_table_needs_priority_and_dont_cares_are_explicit(device: Device):
    err = write_one(device, INSERT, table_entry=acl_entry(priority=0))
    assert err is not None and "priority must be > 0" in err.message
    assert write_one(device, INSERT, table_entry=acl_entry(priority=10)) is None
    assert write_one(device, INSERT, table_entry=acl_entry(priority=11)) is None
    keys = [(k, p) for (_, k, p, _) in pipeline(device).entries.values()]
    assert keys[0] == ((TernaryMatch(0x0A000000, 0xFF000000), RangeMatch(0x50, 0x100),
                        OptionalMatch(None)), 10)


def test_ternary_mask_zero_and_value_outside_mask_rejected(device: Device):
    e = acl_entry()
    e.match[0].ternary.mask = b"\x00"
    assert "mask 0 is a don't-care" in write_one(device, INSERT, table_entry=e).message
    e = acl_entry()
    e.match[0].ternary.value = b"\x0a\x00\x00\x01"
    assert "bits outside mask" in write_one(device, INSERT, table_entry=e).message


def test_table_size_is_resource_exhausted(device: Device):
    for i in range(4):
        assert write_one(device, INSERT, table_entry=lpm_entry(dst=bytes([10, i, 0, 0]))) is None
    err = write_one(device, INSERT, table_entry=lpm_entry(dst=b"\x0b\x00\x00\x00"))
    assert err is not None and err.code == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_default_entry_only_via_modify(device: Device):
    default = p4r.TableEntry(table_id=LPM, is_default_action=True)
    default.action.action.action_id = DROP
    err = write_one(device, INSERT, table_entry=default)
    assert err is not None and "only be modified" in err.message
    assert write_one(device, MODIFY, table_entry=default) is None
    assert pipeline(device).defaults["MyIngress.ipv4_lpm"] == BoundAction("MyIngress.drop")
    (read,) = device.read([p4r.Entity(table_entry=p4r.TableEntry(table_id=LPM, is_default_action=True))])
    assert read.table_entry.action.action.action_id == DROP
    # wildcard reads do not include default entries
    assert device.read([p4r.Entity(table_entry=p4r.TableEntry())]) == []
    reset = p4r.TableEntry(table_id=LPM, is_default_action=True)
    assert write_one(device, MODIFY, table_entry=reset) is None
    assert "MyIngress.ipv4_lpm" not in pipeline(device).defaults


def test_const_table_and_const_default_are_permission_denied(device: Device):
    e = p4r.TableEntry(table_id=FIXED)
    e.match.add(field_id=1).exact.value = b"\x01"
    e.action.action.action_id = DROP
    assert write_one(device, INSERT, table_entry=e).code == grpc.StatusCode.PERMISSION_DENIED
    d = p4r.TableEntry(table_id=FIXED, is_default_action=True)
    d.action.action.action_id = DROP
    assert write_one(device, MODIFY, table_entry=d).code == grpc.StatusCode.PERMISSION_DENIED


def test_direct_counter_read_and_write(device: Device):
    write_one(device, INSERT, table_entry=lpm_entry())
    dce = p4r.DirectCounterEntry(table_entry=lpm_entry())
    dce.data.byte_count, dce.data.packet_count = 100, 2
    assert write_one(device, MODIFY, direct_counter_entry=dce) is None
    (read,) = device.read([p4r.Entity(direct_counter_entry=p4r.DirectCounterEntry())])
    assert (read.direct_counter_entry.data.byte_count, read.direct_counter_entry.data.packet_count) == (100, 2)


def test_counter_wildcard_read_and_index_range(device: Device):
    ce = p4r.CounterEntry(counter_id=0x12000001)
    ce.index.index = 3
    ce.data.packet_count = 9
    assert write_one(device, MODIFY, counter_entry=ce) is None
    cells = device.read([p4r.Entity(counter_entry=p4r.CounterEntry())])
    assert len(cells) == 8 and cells[3].counter_entry.data.packet_count == 9
    ce.index.index = 8
    assert write_one(device, MODIFY, counter_entry=ce).code == grpc.StatusCode.OUT_OF_RANGE
    assert write_one(device, INSERT, counter_entry=ce).code == grpc.StatusCode.INVALID_ARGUMENT


def test_register_read_write_extension(device: Device):
    re = p4r.RegisterEntry(register_id=0x16000001, data=p4d.P4Data(bitstring=b"\x00\x00\x01\x00"))
    re.index.index = 2
    assert write_one(device, MODIFY, register_entry=re) is None
    assert pipeline(device).registers[("MyIngress.accum", 2)] == 256
    read = device.read([p4r.Entity(register_entry=p4r.RegisterEntry(register_id=0x16000001))])
    assert len(read) == 16 and read[2].register_entry.data.bitstring == b"\x01\x00"
    re.data.bitstring = b"\x01\x00\x00\x00\x00"
    assert "does not fit in 32 bits" in write_one(device, MODIFY, register_entry=re).message


def test_multicast_group_with_port_and_egress_port(device: Device):
    g = p4r.MulticastGroupEntry(multicast_group_id=1)
    g.replicas.add(egress_port=1, instance=1)
    g.replicas.add(port=b"\x00\x02", instance=1)
    pre = p4r.PacketReplicationEngineEntry(multicast_group_entry=g)
    assert write_one(device, INSERT, packet_replication_engine_entry=pre) is None
    assert pipeline(device).groups[1] == [PreReplica(1, 1), PreReplica(2, 1)]
    assert write_one(device, INSERT, packet_replication_engine_entry=pre).code == grpc.StatusCode.ALREADY_EXISTS
    (read,) = device.read([p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
        multicast_group_entry=p4r.MulticastGroupEntry()))])
    assert [r.port for r in read.packet_replication_engine_entry.multicast_group_entry.replicas] == [b"\x01", b"\x02"]
    pre.multicast_group_entry.replicas.add(port=b"\x02", instance=1)
    assert "given twice" in write_one(device, MODIFY, packet_replication_engine_entry=pre).message
    pre_missing = p4r.PacketReplicationEngineEntry(multicast_group_entry=p4r.MulticastGroupEntry(multicast_group_id=5))
    assert write_one(device, DELETE, packet_replication_engine_entry=pre_missing).code == grpc.StatusCode.NOT_FOUND


def test_clone_session(device: Device):
    s = p4r.CloneSessionEntry(session_id=5, packet_length_bytes=64)
    s.replicas.add(egress_port=3)
    assert write_one(device, INSERT, packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
        clone_session_entry=s)) is None
    assert pipeline(device).sessions[5] == ([PreReplica(3, 0)], 0, 64)


def test_unsupported_entities(device: Device):
    err = write_one(device, INSERT, action_profile_member=p4r.ActionProfileMember())
    assert err.code == grpc.StatusCode.UNIMPLEMENTED


def test_target_exception_becomes_internal_error_not_crash(device: Device):
    def boom(*args):
        raise RuntimeError("kaput")
    pipeline(device).table_insert = boom
    err = write_one(device, INSERT, table_entry=lpm_entry())
    assert err.code == grpc.StatusCode.INTERNAL and "kaput" in err.message


def test_packet_in_strips_header_and_packet_out_prepends_it():
    def to_cpu(pipe, port, data):
        return [(255, bytes([0x00, 0x80]) + data), (2, data)] if port != 255 else [(data[1] >> 7 | data[0] << 1, data[2:])]
    target = FakeTarget(to_cpu)
    d = Device(1, target, cpu_port=255)
    d.set_pipeline(Set.VERIFY_AND_COMMIT, config())
    received = []
    d.controller_sink = received.append
    assert d.process(1, b"abc") == [(2, b"abc")]
    (msg,) = received
    assert msg.packet.payload == b"abc"
    assert [(m.metadata_id, m.value) for m in msg.packet.metadata] == [(1, b"\x01"), (2, b"\x00")]
    out = p4r.PacketOut(payload=b"xyz")
    out.metadata.add(metadata_id=1, value=b"\x03")
    assert d.packet_out(out) == [(3, b"xyz")]
    assert target.pipeline.processed[-1] == (255, b"\x01\x80xyz")


def test_digest_delivered_only_when_configured(device: Device):
    received = []
    device.controller_sink = received.append
    pipeline(device).digests.append(Digest("learn_t", (0xAABBCCDDEEFF, 3)))
    device.process(1, b"x")
    assert received == []
    assert write_one(device, INSERT, digest_entry=p4r.DigestEntry(digest_id=0x17000001)) is None
    pipeline(device).digests.append(Digest("learn_t", (0xAABBCCDDEEFF, 3)))
    device.process(1, b"x")
    (msg,) = received
    assert msg.digest.digest_id == 0x17000001
    assert [m.bitstring for m in msg.digest.data[0].struct.members] == [bytes.fromhex("aabbccddeeff"), b"\x03"]


def test_digest_lists_batch_by_timeout_and_acks_release_duplicates(device: Device):
    received = []
    wakeups = []
    device.controller_sink = received.append
    device.digest_wakeup = lambda: wakeups.append(1)
    cfg = p4r.DigestEntry.Config(max_timeout_ns=10**9, max_list_size=0, ack_timeout_ns=10**12)
    assert write_one(device, INSERT, digest_entry=p4r.DigestEntry(digest_id=0x17000001, config=cfg)) is None
    for mac in (1, 2):
        pipeline(device).digests.append(Digest("learn_t", (mac, 3)))
        device.process(1, b"x")
    assert received == [] and len(wakeups) == 3  # the config write, then each opened/extended list
    assert 0 < device.flush_digests() <= 1.0  # seconds until the open list is due
    assert device.flush_digests(time.monotonic_ns() + 2 * 10**9) is None
    (msg,) = received
    assert [m.struct.members[0].bitstring for m in msg.digest.data] == [b"\x01", b"\x02"]
    assert device.digest_ack(p4r.DigestListAck(digest_id=0x17000001, list_id=msg.digest.list_id))
    assert not device.digest_ack(p4r.DigestListAck(digest_id=0x17000001, list_id=msg.digest.list_id))


def test_register_range_extension_writes_and_reads_many_cells(device: Device):
    """innet's register-range extern entries (switch/p4rt_codec/register_range.py)."""
    from innet.switch.p4rt_codec import register_range as rr

    values = [5, 0xFFFFFFFF, 7, 256]
    (write,) = [rr.write_entity(0x16000001, 3, values, 32)]
    assert write_one(device, MODIFY, extern_entry=write.extern_entry) is None
    assert [pipeline(device).registers.get(("MyIngress.accum", i), 0) for i in range(2, 8)] == [0, *values, 0]
    (answer,) = device.read([rr.read_entity(0x16000001, 2, 6)])
    start, count, cells = rr.parse(answer.extern_entry, 32)
    assert (start, count, cells.tolist()) == (2, 6, [0, *values, 0])
    beyond = rr.write_entity(0x16000001, 14, [1, 2, 3], 32).extern_entry
    assert write_one(device, MODIFY, extern_entry=beyond).code == grpc.StatusCode.OUT_OF_RANGE
    assert write_one(device, INSERT, extern_entry=write.extern_entry).code == grpc.StatusCode.INVALID_ARGUMENT
    count_only = rr.read_entity(0x16000001, 0, 2).extern_entry
    assert "needs the cells, not only a count" in write_one(device, MODIFY, extern_entry=count_only).message
    other = p4r.ExternEntry(extern_type_id=0x90, extern_id=0x16000001)
    assert write_one(device, MODIFY, extern_entry=other).code == grpc.StatusCode.UNIMPLEMENTED
    # all-or-none batches undo a range write like any other update
    undo = rr.write_entity(0x16000001, 3, [9, 9, 9, 9], 32)
    results = device.write([p4r.Update(type=MODIFY, entity=undo), p4r.Update(type=MODIFY, entity=p4r.Entity(
        extern_entry=beyond))], p4r.WriteRequest.ROLLBACK_ON_ERROR)
    assert results[1] is not None and results[1].code == grpc.StatusCode.OUT_OF_RANGE
    assert [pipeline(device).registers.get(("MyIngress.accum", i), 0) for i in range(3, 7)] == values
