"""All-or-none Write batches (``ROLLBACK_ON_ERROR`` and ``DATAPLANE_ATOMIC``, P4Runtime
spec "Batch Atomicity").

How: an undo log. Before each update is applied, the state it is about to change is read
through the device's own Read path and turned into the inverse update (INSERT -> DELETE
of the same key; MODIFY -> MODIFY back to what was read; DELETE -> INSERT of what was
read). At the first failed update the inverses of the applied ones run in reverse order,
so server and target state are as before the batch. Reading back through Read keeps the
inverse exact for every entity kind the server supports, without a second copy of the
state. The device lock is held for the whole batch and packets take it too, so no packet
sees an intermediate state: that makes the same mechanism ``DATAPLANE_ATOMIC``.

Reporting: the failed update carries its own error; every other update of the batch is
ABORTED, saying which update failed (the spec leaves their codes open; ABORTED is gRPC's
"the operation was aborted because of a conflict").
"""

from __future__ import annotations

from typing import Callable

import grpc
from finsy.proto import p4r

from innet.switch.p4runtime.errors import P4RuntimeError

Reader = Callable[[p4r.Entity], list[p4r.Entity]]
"""Reads the entities one selector selects (the device's Read of one entity)."""


def selector(entity: p4r.Entity) -> p4r.Entity:
    """The Read selector of exactly the object ``entity`` writes (its key, no payload)."""
    which = entity.WhichOneof("entity")
    out = p4r.Entity()
    if which == "table_entry":
        out.table_entry.CopyFrom(_entry_key(entity.table_entry))
    elif which == "counter_entry":
        out.counter_entry.counter_id = entity.counter_entry.counter_id
        if entity.counter_entry.HasField("index"):
            out.counter_entry.index.CopyFrom(entity.counter_entry.index)
    elif which == "meter_entry":
        out.meter_entry.meter_id = entity.meter_entry.meter_id
        if entity.meter_entry.HasField("index"):
            out.meter_entry.index.CopyFrom(entity.meter_entry.index)
    elif which == "register_entry":
        out.register_entry.register_id = entity.register_entry.register_id
        if entity.register_entry.HasField("index"):
            out.register_entry.index.CopyFrom(entity.register_entry.index)
    elif which == "direct_counter_entry":
        out.direct_counter_entry.table_entry.CopyFrom(_entry_key(entity.direct_counter_entry.table_entry))
    elif which == "direct_meter_entry":
        out.direct_meter_entry.table_entry.CopyFrom(_entry_key(entity.direct_meter_entry.table_entry))
    elif which == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        kind = pre.WhichOneof("type")
        if kind == "multicast_group_entry":
            out.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = \
                pre.multicast_group_entry.multicast_group_id
        elif kind == "clone_session_entry":
            out.packet_replication_engine_entry.clone_session_entry.session_id = pre.clone_session_entry.session_id
        else:
            out.CopyFrom(entity)
    elif which == "digest_entry":
        out.digest_entry.digest_id = entity.digest_entry.digest_id
    elif which == "action_profile_member":
        m = entity.action_profile_member
        out.action_profile_member.action_profile_id = m.action_profile_id
        out.action_profile_member.member_id = m.member_id
    elif which == "action_profile_group":
        g = entity.action_profile_group
        out.action_profile_group.action_profile_id = g.action_profile_id
        out.action_profile_group.group_id = g.group_id
    else:
        out.CopyFrom(entity)
    return out


def _entry_key(entry: p4r.TableEntry) -> p4r.TableEntry:
    key = p4r.TableEntry(table_id=entry.table_id, priority=entry.priority,
                         is_default_action=entry.is_default_action)
    key.match.extend(entry.match)
    return key


def inverse(update: p4r.Update, read: Reader) -> list[p4r.Update]:
    """The updates that undo ``update`` once applied, from the state before it. A read
    that fails leaves nothing to undo: the update itself then fails the same way."""
    key = selector(update.entity)
    if update.type == p4r.Update.INSERT:
        return [p4r.Update(type=p4r.Update.DELETE, entity=key)]
    try:
        before = read(key)
    except P4RuntimeError:
        return []
    undo = p4r.Update.MODIFY if update.type == p4r.Update.MODIFY else p4r.Update.INSERT
    return [p4r.Update(type=undo, entity=e) for e in before]


def aborted(failed: int) -> P4RuntimeError:
    """The result of an update that was rolled back (or never tried) because ``failed`` failed."""
    return P4RuntimeError(grpc.StatusCode.ABORTED,
                          f"not applied: update {failed} failed and the batch was rolled back")
