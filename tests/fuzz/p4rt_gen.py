"""P4Runtime requests for the server fuzz tests: valid entities built from a P4Info, a
field-level protobuf mutator, and random bytes parsed as messages; all driven by a
seeded ``random.Random`` (hypothesis draws the seed)."""

from __future__ import annotations

import random
from typing import Any

from finsy.proto import U128, p4i, p4r
from google.protobuf import descriptor as _d
from google.protobuf.message import DecodeError, Message

INTERESTING_INTS = (0, 1, 2, 7, 8, 9, 15, 16, 31, 32, 33, 63, 64, 255, 256, 511, 512, 1023, 4096, 65535,
                    65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**64 - 1)


def value_bytes(rng: random.Random, bits: int) -> bytes:
    """A value for a ``bits``-wide field: mostly fitting, sometimes padded or too wide."""
    n = max((bits + 7) // 8, 1)
    choice = rng.random()
    if choice < 0.75:
        v = rng.getrandbits(bits) if bits else 0
        return v.to_bytes(n, "big")
    if choice < 0.85:
        return b"\x00" + rng.getrandbits(max(bits, 1)).to_bytes(n, "big")  # padded
    if choice < 0.92:
        return rng.randbytes(rng.randint(0, n + 2))  # maybe too wide or empty
    return (1 << bits).to_bytes(n + 1, "big")  # one past the width


def _match(rng: random.Random, mf: p4i.MatchField) -> p4r.FieldMatch:
    fm = p4r.FieldMatch(field_id=mf.id)
    w = mf.bitwidth
    kind = mf.match_type
    if kind == p4i.MatchField.EXACT:
        fm.exact.value = value_bytes(rng, w)
    elif kind == p4i.MatchField.LPM:
        plen = rng.randint(1, w) if rng.random() < 0.9 else rng.choice((0, w + 1, 2**31 - 1))
        v = rng.getrandbits(w) >> (w - min(plen, w)) << (w - min(plen, w)) if plen else 0
        fm.lpm.value = v.to_bytes((w + 7) // 8, "big") if rng.random() < 0.9 else value_bytes(rng, w)
        fm.lpm.prefix_len = plen
    elif kind == p4i.MatchField.TERNARY:
        mask = rng.getrandbits(w) or 1
        fm.ternary.value = (rng.getrandbits(w) & mask).to_bytes((w + 7) // 8, "big") \
            if rng.random() < 0.9 else value_bytes(rng, w)
        fm.ternary.mask = mask.to_bytes((w + 7) // 8, "big")
    elif kind == p4i.MatchField.RANGE:
        a, b = sorted((rng.getrandbits(w), rng.getrandbits(w)))
        if rng.random() < 0.1:
            a, b = b, a
        fm.range.low, fm.range.high = a.to_bytes((w + 7) // 8, "big"), b.to_bytes((w + 7) // 8, "big")
    elif kind == p4i.MatchField.OPTIONAL:
        fm.optional.value = value_bytes(rng, w)
    return fm


def _action(rng: random.Random, info: p4i.P4Info, action_id: int) -> p4r.Action:
    action = next((a for a in info.actions if a.preamble.id == action_id), None)
    out = p4r.Action(action_id=action_id)
    if action is not None:
        for p in action.params:
            out.params.add(param_id=p.id, value=value_bytes(rng, p.bitwidth))
    return out


def table_entry(rng: random.Random, info: p4i.P4Info) -> p4r.TableEntry:
    t = rng.choice(list(info.tables))
    e = p4r.TableEntry(table_id=t.preamble.id)
    needs_priority = any(mf.match_type in (p4i.MatchField.TERNARY, p4i.MatchField.RANGE,
                                           p4i.MatchField.OPTIONAL) for mf in t.match_fields)
    if rng.random() < 0.1:
        e.is_default_action = True
    else:
        for mf in t.match_fields:
            if rng.random() < 0.95:
                e.match.append(_match(rng, mf))
        if needs_priority:
            e.priority = rng.randint(1, 100)
    refs = [r.id for r in t.action_refs]
    if t.implementation_id and rng.random() < 0.9:
        if rng.random() < 0.5:
            e.action.action_profile_member_id = rng.randint(0, 4)
        else:
            e.action.action_profile_group_id = rng.randint(0, 4)
    elif refs:
        e.action.action.CopyFrom(_action(rng, info, rng.choice(refs)))
    if t.idle_timeout_behavior and rng.random() < 0.5:
        e.idle_timeout_ns = rng.choice((1, 10**9, 2**63 - 1))
    if rng.random() < 0.1:
        e.counter_data.packet_count, e.counter_data.byte_count = rng.randint(0, 99), rng.randint(0, 9999)
    if rng.random() < 0.1:
        e.meter_config.cir, e.meter_config.cburst = rng.randint(0, 1000), rng.randint(0, 1000)
        e.meter_config.pir, e.meter_config.pburst = rng.randint(0, 1000), rng.randint(0, 1000)
    return e


def _index(rng: random.Random, size: int) -> int:
    return rng.randrange(max(size, 1)) if rng.random() < 0.85 else rng.choice((size, size + 1, 2**63 - 1))


def entity(rng: random.Random, info: p4i.P4Info) -> p4r.Entity:
    """A valid or nearly valid entity of any kind the P4Info has."""
    kind = rng.choice(("table", "table", "table", "counter", "direct_counter", "meter", "direct_meter",
                       "register", "mcast", "clone", "digest", "member", "group"))
    if kind == "table":
        return p4r.Entity(table_entry=table_entry(rng, info))
    if kind == "counter":
        c = rng.choice(list(info.counters))
        ce = p4r.CounterEntry(counter_id=c.preamble.id)
        ce.index.index = _index(rng, c.size)
        ce.data.packet_count = rng.randint(0, 10)
        return p4r.Entity(counter_entry=ce)
    if kind == "direct_counter":
        dce = p4r.DirectCounterEntry(table_entry=table_entry(rng, info))
        dce.data.packet_count = rng.randint(0, 10)
        return p4r.Entity(direct_counter_entry=dce)
    if kind == "meter":
        m = rng.choice(list(info.meters))
        me = p4r.MeterEntry(meter_id=m.preamble.id)
        me.index.index = _index(rng, m.size)
        me.config.cir, me.config.cburst = rng.randint(0, 100), rng.randint(0, 100)
        me.config.pir, me.config.pburst = rng.randint(0, 100), rng.randint(0, 100)
        return p4r.Entity(meter_entry=me)
    if kind == "direct_meter":
        dme = p4r.DirectMeterEntry(table_entry=table_entry(rng, info))
        dme.config.cir, dme.config.pir = rng.randint(0, 100), rng.randint(0, 100)
        return p4r.Entity(direct_meter_entry=dme)
    if kind == "register":
        r = rng.choice(list(info.registers))
        re_ = p4r.RegisterEntry(register_id=r.preamble.id)
        re_.index.index = _index(rng, r.size)
        re_.data.bitstring = value_bytes(rng, r.type_spec.bitstring.bit.bitwidth)
        return p4r.Entity(register_entry=re_)
    if kind == "mcast":
        g = p4r.MulticastGroupEntry(multicast_group_id=rng.choice((0, 1, 2, 65535, 65536)))
        for _ in range(rng.randint(0, 4)):
            rep = g.replicas.add(instance=rng.randint(0, 3))
            if rng.random() < 0.5:
                rep.egress_port = rng.choice((1, 2, 255, 511, 512, 2**32 - 1))
            else:
                rep.port = value_bytes(rng, 9)
        return p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
            multicast_group_entry=g))
    if kind == "clone":
        s = p4r.CloneSessionEntry(session_id=rng.choice((0, 1, 5, 1023, 1024, 2**32 - 1)),
                                  class_of_service=rng.randint(0, 8),
                                  packet_length_bytes=rng.choice((0, 64, 2**31 - 1)))
        for _ in range(rng.randint(0, 3)):
            s.replicas.add(instance=rng.randint(0, 3), egress_port=rng.choice((1, 2, 255, 511, 512)))
        return p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
            clone_session_entry=s))
    if kind == "digest":
        d = rng.choice(list(info.digests))
        de = p4r.DigestEntry(digest_id=d.preamble.id)
        de.config.max_timeout_ns = rng.choice((0, 1, 10**6, 2**63 - 1))
        de.config.max_list_size = rng.choice((0, 1, 100, 2**31 - 1))
        de.config.ack_timeout_ns = rng.choice((0, 10**9))
        return p4r.Entity(digest_entry=de)
    profile = rng.choice(list(info.action_profiles))
    if kind == "member":
        table = next((t for t in info.tables if t.implementation_id == profile.preamble.id), None)
        m = p4r.ActionProfileMember(action_profile_id=profile.preamble.id, member_id=rng.randint(0, 4))
        if table is not None and table.action_refs:
            m.action.CopyFrom(_action(rng, info, rng.choice(list(table.action_refs)).id))
        return p4r.Entity(action_profile_member=m)
    g2 = p4r.ActionProfileGroup(action_profile_id=profile.preamble.id, group_id=rng.randint(0, 4),
                                max_size=rng.choice((0, 2, 4, 5, 2**31 - 1)))
    for _ in range(rng.randint(0, 5)):
        g2.members.add(member_id=rng.randint(0, 4), weight=rng.choice((0, 1, 2, 2**31 - 1)))
    return p4r.Entity(action_profile_group=g2)


def update(rng: random.Random, info: p4i.P4Info) -> p4r.Update:
    return p4r.Update(type=rng.choice((1, 1, 2, 3)), entity=entity(rng, info))


# ---------------------------------------------------------------------- mutation

def _mutate_scalar(rng: random.Random, fd: _d.FieldDescriptor, current: Any) -> Any:
    t = fd.type
    if t == fd.TYPE_BOOL:
        return not current
    if t == fd.TYPE_ENUM:
        return rng.choice([v.number for v in fd.enum_type.values] + [-1, 99, 2**31 - 1])
    if t in (fd.TYPE_STRING,):
        return rng.choice(("", "x", "Ing.l2", "\u00e9\u0000", "a" * 300))
    if t == fd.TYPE_BYTES:
        return rng.choice((b"", b"\x00", b"\xff" * 17, rng.randbytes(rng.randint(0, 40)),
                           b"\x00" + bytes(current)[:16], bytes(current)[1:]))
    if t in (fd.TYPE_DOUBLE, fd.TYPE_FLOAT):
        return rng.choice((0.0, -1.0, 1e300, float("inf"), float("nan")))
    signed = t in (fd.TYPE_INT32, fd.TYPE_INT64, fd.TYPE_SINT32, fd.TYPE_SINT64, fd.TYPE_SFIXED32,
                   fd.TYPE_SFIXED64)
    bits = 32 if t in (fd.TYPE_INT32, fd.TYPE_UINT32, fd.TYPE_SINT32, fd.TYPE_FIXED32,
                       fd.TYPE_SFIXED32) else 64
    v = rng.choice(INTERESTING_INTS + (current + 1, current - 1, rng.getrandbits(bits)))
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if rng.random() < 0.2 and signed:
        v = -v
    return min(max(v, lo), hi)


def mutate(rng: random.Random, msg: Message, depth: int = 0) -> None:
    """One field-level mutation somewhere in ``msg`` (in place): a scalar to an edge or
    random value, an enum to an undefined number, a message cleared or set empty, a
    repeated element dropped, duplicated or added, a oneof switched."""
    fields = list(msg.DESCRIPTOR.fields)
    if not fields:
        return
    fd = rng.choice(fields)
    if fd.type == fd.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry:
        return  # maps (P4Info type_info) are left alone
    if fd.is_repeated:
        items = getattr(msg, fd.name)
        op = rng.randrange(4)
        if op == 0 and len(items):
            del items[rng.randrange(len(items))]
        elif op == 1 and len(items):
            if fd.type == fd.TYPE_MESSAGE:
                items.add().CopyFrom(items[rng.randrange(len(items))])
            else:
                items.append(items[rng.randrange(len(items))])
        elif op == 2 or not len(items):
            if fd.type == fd.TYPE_MESSAGE:
                new = items.add()
                if depth < 4 and rng.random() < 0.5:
                    mutate(rng, new, depth + 1)
            else:
                zero = {fd.TYPE_BYTES: b"", fd.TYPE_STRING: "", fd.TYPE_BOOL: False}.get(fd.type, 0)
                items.append(_mutate_scalar(rng, fd, zero))
        elif fd.type == fd.TYPE_MESSAGE and depth < 6:
            mutate(rng, items[rng.randrange(len(items))], depth + 1)
        return
    if fd.type == fd.TYPE_MESSAGE:
        if msg.HasField(fd.name) and rng.random() < 0.2:
            msg.ClearField(fd.name)
        elif depth < 6:
            mutate(rng, getattr(msg, fd.name), depth + 1)  # also switches a oneof to it
        return
    setattr(msg, fd.name, _mutate_scalar(rng, fd, getattr(msg, fd.name)))


def mutated(rng: random.Random, msg: Message, most: int = 4) -> Message:
    out = type(msg)()
    out.CopyFrom(msg)
    for _ in range(rng.randint(1, most)):
        mutate(rng, out)
    return out


def from_random_bytes(rng: random.Random, cls: type[Message], valid: Message) -> Message | None:
    """Random bytes, or a valid message's wire bytes with bytes flipped/cut, parsed as
    ``cls`` (None when protobuf rejects them: gRPC would answer before the server)."""
    if rng.random() < 0.5:
        data = rng.randbytes(rng.randint(0, 200))
    else:
        buf = bytearray(valid.SerializeToString())
        for _ in range(rng.randint(1, 4)):
            if buf:
                buf[rng.randrange(len(buf))] = rng.randrange(256)
        if rng.random() < 0.3 and buf:
            del buf[rng.randrange(len(buf)):]
        data = bytes(buf)
    try:
        return cls.FromString(data)
    except (DecodeError, RuntimeError, ValueError):
        return None


def election(value: int) -> p4r.Uint128:
    return U128.encode(value)
