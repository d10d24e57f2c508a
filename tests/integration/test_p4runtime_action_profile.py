"""Action profiles and selectors over P4Runtime (gRPC on loopback) with innet's executor.

The switch runs in-process (``SwitchServer`` + ``InnetTarget``); the controller pushes P4
source, fetches the derived P4Info, and programs members, groups and indirect entries over
gRPC. Packets go through the device directly to check which member a group picks.
"""

from __future__ import annotations


import grpc
import pytest
from finsy.proto import U128, p4r

from innet.switch.p4rt_codec.status import decode_write_errors
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.server import SwitchOptions, SwitchServer

from testkit.p4rt_loopback import Client, arbitration

PROGRAM = b"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> s; bit<8> tag; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port, bit<8> tag) { sm.egress_spec = port; h.h.tag = tag; }
    @max_group_size(4)
    action_selector(HashAlgorithm.identity, 8, 16) sel;
    action_selector(HashAlgorithm.identity, 16, 16) one;
    action_profile(2) ap;
    table ts { key = { h.h.k : exact; h.h.s : selector; } actions = { fwd; } implementation = sel; }
    table to { key = { h.h.k : exact; h.h.s : selector; } actions = { fwd; } implementation = one; }
    table tp { key = { h.h.k : exact; } actions = { fwd; } implementation = ap; }
    apply {
        sm.egress_spec = 9;
        if (h.h.k < 0x40) { ts.apply(); } else if (h.h.k < 0x80) { to.apply(); } else { tp.apply(); }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
"""

INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE


@pytest.fixture(params=["python", "native"])
def env(request):
    options = SwitchOptions(device_id=1, grpc_address="127.0.0.1:0")
    with SwitchServer(options, InnetTarget(executor=request.param)) as server:
        client = Client(server.grpc_address)
        stream = client.stream(1)
        arbitration(stream)
        client.stub.SetForwardingPipelineConfig(p4r.SetForwardingPipelineConfigRequest(
            device_id=1, election_id=U128.encode(1),
            action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
            config=p4r.ForwardingPipelineConfig(p4_device_config=PROGRAM)))
        reply = client.stub.GetForwardingPipelineConfig(p4r.GetForwardingPipelineConfigRequest(
            device_id=1, response_type=p4r.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE))
        info = reply.config.p4info
        ids = {o.preamble.name: o.preamble.id
               for group in (info.tables, info.actions, info.action_profiles) for o in group}
        yield server, client, ids
        client.close()


def member(ids, profile: str, mid: int, port: int, tag: int = 0) -> p4r.Entity:
    m = p4r.ActionProfileMember(action_profile_id=ids[profile], member_id=mid)
    m.action.action_id = ids["Ing.fwd"]
    m.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    m.action.params.add(param_id=2, value=bytes([tag]))
    return p4r.Entity(action_profile_member=m)


def group(ids, profile: str, gid: int, members: list[tuple[int, int]]) -> p4r.Entity:
    g = p4r.ActionProfileGroup(action_profile_id=ids[profile], group_id=gid)
    for mid, weight in members:
        g.members.add(member_id=mid, weight=weight)
    return p4r.Entity(action_profile_group=g)


def entry(ids, table: str, k: int, *, member_id: int | None = None, group_id: int | None = None,
          default: bool = False) -> p4r.Entity:
    e = p4r.TableEntry(table_id=ids[table], is_default_action=default)
    if not default:
        e.match.add(field_id=1).exact.value = bytes([k])
    if member_id is not None:
        e.action.action_profile_member_id = member_id
    if group_id is not None:
        e.action.action_profile_group_id = group_id
    return p4r.Entity(table_entry=e)


def write(client: Client, *updates: tuple[int, p4r.Entity]) -> list[grpc.StatusCode]:
    """Status code per update (OK ones included)."""
    try:
        client.write(*[p4r.Update(type=kind, entity=e) for kind, e in updates])
    except grpc.RpcError as error:
        details = dict(error.trailing_metadata())["grpc-status-details-bin"]  # type: ignore[union-attr]
        from finsy.proto import rpc_status

        status = rpc_status.Status.FromString(details)
        return [grpc.StatusCode(_code(e.canonical_code)) for e in decode_write_errors(status)]
    return [grpc.StatusCode.OK] * len(updates)


def _code(number: int) -> tuple[int, str]:
    return next(c.value for c in grpc.StatusCode if c.value[0] == number)


def send(server: SwitchServer, k: int, s: int) -> tuple[int, int]:
    (out,) = server.device.process(0, bytes([k, s, 0]))
    return out[0], out[1][2]


OK = grpc.StatusCode.OK


def test_members_groups_and_selection(env):
    server, client, ids = env
    assert write(client, *[(INSERT, member(ids, "Ing.sel", m, m, 0x10 + m)) for m in (1, 2, 3)]) == [OK] * 3
    assert write(client, (INSERT, member(ids, "Ing.sel", 1, 1)), (MODIFY, member(ids, "Ing.sel", 9, 1))) == [
        grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.NOT_FOUND]
    # members listed 3, 1, 2: BMv2 orders a group by member handle (creation order) -> 1, 2, 3
    assert write(client, (INSERT, group(ids, "Ing.sel", 10, [(3, 1), (1, 1), (2, 1)])),
                 (INSERT, entry(ids, "Ing.ts", 1, group_id=10)),
                 (INSERT, entry(ids, "Ing.ts", 2, member_id=2))) == [OK] * 3
    assert [send(server, 1, s) for s in (0, 1, 2, 5)] == [(1, 0x11), (2, 0x12), (3, 0x13), (3, 0x13)]
    assert send(server, 2, 0) == (2, 0x12)
    assert write(client,
                 (INSERT, group(ids, "Ing.sel", 11, [(1, 1), (99, 1)])),
                 (INSERT, group(ids, "Ing.sel", 12, [(1, 2), (2, 3)])),
                 (INSERT, group(ids, "Ing.sel", 13, [(1, 0)])),
                 (DELETE, member(ids, "Ing.sel", 1, 1)),
                 (DELETE, group(ids, "Ing.sel", 10, [])),
                 (INSERT, entry(ids, "Ing.ts", 3, group_id=77)),
                 (INSERT, entry(ids, "Ing.ts", 4, member_id=77))) == [
        grpc.StatusCode.NOT_FOUND, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.NOT_FOUND, grpc.StatusCode.NOT_FOUND]
    # weights: member 2 twice, member 3 once -> places 2, 2, 3
    assert write(client, (MODIFY, group(ids, "Ing.sel", 10, [(3, 1), (2, 2)])),
                 (MODIFY, member(ids, "Ing.sel", 3, 7, 0x77))) == [OK, OK]
    assert [send(server, 1, s) for s in (0, 1, 2)] == [(2, 0x12), (2, 0x12), (7, 0x77)]

    members = client.read(p4r.Entity(action_profile_member=p4r.ActionProfileMember()))
    assert [(e.action_profile_member.member_id, e.action_profile_member.action.params[0].value)
            for e in members] == [(1, b"\x01"), (2, b"\x02"), (3, b"\x07")]
    groups = client.read(p4r.Entity(action_profile_group=p4r.ActionProfileGroup(
        action_profile_id=ids["Ing.sel"])))
    assert [(g.action_profile_group.group_id, [(m.member_id, m.weight) for m in g.action_profile_group.members])
            for g in groups] == [(10, [(3, 1), (2, 2)])]
    entries = client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=ids["Ing.ts"])))
    assert sorted((e.table_entry.match[0].exact.value, e.table_entry.action.WhichOneof("type"))
                  for e in entries) == [(b"\x01", "action_profile_group_id"), (b"\x02", "action_profile_member_id")]

    # a default group for misses, read back as such
    assert write(client, (MODIFY, entry(ids, "Ing.ts", 0, group_id=10, default=True))) == [OK]
    assert send(server, 0x30, 2) == (7, 0x77)
    (default,) = client.read(entry(ids, "Ing.ts", 0, default=True))
    assert default.table_entry.action.action_profile_group_id == 10

    # tear down in dependency order
    assert write(client, (MODIFY, entry(ids, "Ing.ts", 0, default=True)),
                 (DELETE, entry(ids, "Ing.ts", 1)), (DELETE, entry(ids, "Ing.ts", 2)),
                 (DELETE, group(ids, "Ing.sel", 10, [])),
                 *[(DELETE, member(ids, "Ing.sel", m, 0)) for m in (1, 2, 3)]) == [OK] * 7
    assert send(server, 0x30, 2) == (9, 0)
    assert client.read(p4r.Entity(action_profile_member=p4r.ActionProfileMember())) == []


def test_action_profile_without_selector(env):
    server, client, ids = env
    assert write(client, (INSERT, member(ids, "Ing.ap", 1, 4, 0x44)), (INSERT, member(ids, "Ing.ap", 2, 5)),
                 (INSERT, member(ids, "Ing.ap", 3, 6)),
                 (INSERT, group(ids, "Ing.ap", 1, [(1, 1)])),
                 (INSERT, entry(ids, "Ing.tp", 0x90, member_id=1))) == [
        OK, OK, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INVALID_ARGUMENT, OK]
    assert send(server, 0x90, 0) == (4, 0x44)
    direct = p4r.TableEntry(table_id=ids["Ing.tp"])
    direct.match.add(field_id=1).exact.value = b"\x91"
    direct.action.action.action_id = ids["Ing.fwd"]
    direct.action.action.params.add(param_id=1, value=b"\x01")
    direct.action.action.params.add(param_id=2, value=b"\x01")
    assert write(client, (INSERT, p4r.Entity(table_entry=direct))) == [grpc.StatusCode.INVALID_ARGUMENT]


def test_one_shot_action_sets(env):
    server, client, ids = env
    e = p4r.TableEntry(table_id=ids["Ing.to"])
    e.match.add(field_id=1).exact.value = b"\x41"
    for port, weight in ((5, 1), (6, 2)):
        a = e.action.action_profile_action_set.action_profile_actions.add(weight=weight)
        a.action.action_id = ids["Ing.fwd"]
        a.action.params.add(param_id=1, value=bytes([port]))
        a.action.params.add(param_id=2, value=bytes([port]))
    assert write(client, (INSERT, p4r.Entity(table_entry=e))) == [OK]
    assert [send(server, 0x41, s)[0] for s in range(6)] == [5, 6, 6] * 2
    (back,) = client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=ids["Ing.to"])))
    actions = back.table_entry.action.action_profile_action_set.action_profile_actions
    assert [(a.weight, a.action.params[0].value) for a in actions] == [(1, b"\x05"), (2, b"\x06")]
    # one-shot and member programming do not mix in one profile; hidden members are not read
    assert write(client, (INSERT, member(ids, "Ing.one", 1, 1))) == [grpc.StatusCode.INVALID_ARGUMENT]
    assert client.read(p4r.Entity(action_profile_member=p4r.ActionProfileMember(
        action_profile_id=ids["Ing.one"]))) == []
    assert write(client, (DELETE, p4r.Entity(table_entry=e))) == [OK]
    profile = server.device._active.loaded.pipeline.pipeline.action_profile("Ing.one")  # type: ignore[union-attr]
    assert profile.members == {} and profile.groups == {}
    assert write(client, (INSERT, member(ids, "Ing.one", 1, 1))) == [OK]
