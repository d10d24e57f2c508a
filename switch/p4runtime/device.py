"""One P4Runtime device: its forwarding pipeline config, entity state and packet path.

Everything that touches the running pipeline holds ``Device.lock``: a Write batch is
applied as a whole between two packets, never half-way relative to packet processing,
and a pipeline swap happens between packets too. gRPC-free, so it is tested directly.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import grpc
from finsy.proto import p4i, p4r

from innet.switch.p4runtime import ageing, rollback
from innet.switch.p4runtime.tmp_device_config import unwrap_device_config
from innet.switch.p4runtime.digests import DigestLists
from innet.switch.p4runtime.errors import (
    P4RuntimeError,
    invalid,
    no_pipeline,
    unimplemented,
)
from innet.switch.p4runtime.externs import ExternState
from innet.switch.p4runtime.packetio import pack_packet_out, unpack_packet_in
from innet.switch.p4runtime.action_profiles import ProfileState
from innet.switch.p4runtime.schema import Schema
from innet.switch.p4runtime.tables import TableState
from innet.switch.p4runtime.target_api import LoadedConfig, Target, TargetError

LOG = logging.getLogger(__name__)

Set = p4r.SetForwardingPipelineConfigRequest
Get = p4r.GetForwardingPipelineConfigRequest
ControllerSink = Callable[[p4r.StreamMessageResponse], None]


@dataclass
class _Active:
    config: p4r.ForwardingPipelineConfig
    loaded: LoadedConfig
    schema: Schema
    tables: TableState
    externs: ExternState
    profiles: ProfileState
    digests: DigestLists = field(default_factory=DigestLists)

    @classmethod
    def build(cls, config: p4r.ForwardingPipelineConfig, loaded: LoadedConfig) -> "_Active":
        schema = Schema.build(loaded.p4info)
        tables = TableState(schema, loaded.pipeline)
        profiles = ProfileState(schema, loaded.pipeline, tables)
        tables.profiles = profiles
        return cls(config, loaded, schema, tables, ExternState(schema, loaded.pipeline, tables), profiles)


def _enum_name(enum: Any, value: int, what: str) -> str:
    """The name of ``value`` in a proto enum; INVALID_ARGUMENT naming the field, the value
    and the defined names when the proto defines no such value (a malformed request, not a
    server failure)."""
    try:
        name: str = enum.Name(value)
    except ValueError:
        names = ", ".join(n for n in enum.keys() if n != "UNSPECIFIED")
        raise invalid(f"{what} {value} is not one of {names}") from None
    return name


class Device:
    """A device with id ``device_id`` whose pipelines are built by ``target``."""

    def __init__(self, device_id: int, target: Target, cpu_port: int | None = None) -> None:
        import threading

        self.device_id = device_id
        self.target = target
        self.cpu_port = cpu_port
        self.lock = threading.RLock()
        self.controller_sink: ControllerSink | None = None
        """Receives PacketIn, DigestList and IdleTimeoutNotification messages for the
        primary controller."""
        self._active: _Active | None = None
        self._saved: tuple[p4r.ForwardingPipelineConfig, LoadedConfig] | None = None
        self.digest_wakeup: Callable[[], None] | None = None
        """Called when a digest list was opened or reconfigured (the switch's timer waits on it)."""
        self.pipeline_listener: Callable[[Any], None] | None = None
        """Called with the target's pipeline (None: none) whenever the committed pipeline
        changes, under ``lock``: a C port loop that runs packets without ``Device.lock``
        rebinds to it (``innet.switch.native.portio``)."""

    # -- pipeline config -----------------------------------------------------------------

    @property
    def has_pipeline(self) -> bool:
        return self._active is not None

    def _verify(self, config: p4r.ForwardingPipelineConfig) -> LoadedConfig:
        if not config.p4_device_config:
            raise invalid("SetForwardingPipelineConfig: config has no p4_device_config")
        p4info = config.p4info if config.HasField("p4info") else None
        try:
            return self.target.load(p4info, unwrap_device_config(bytes(config.p4_device_config)))
        except TargetError as error:
            raise invalid(f"SetForwardingPipelineConfig: device config rejected: {error}") from None

    def set_pipeline(self, action: int, config: p4r.ForwardingPipelineConfig) -> None:
        """Apply a SetForwardingPipelineConfig action (P4Runtime spec semantics)."""
        if action == Set.VERIFY:
            self._verify(config)
        elif action == Set.VERIFY_AND_SAVE:
            loaded = self._verify(config)
            with self.lock:
                self._saved = (self._stored_config(config, loaded), loaded)
        elif action == Set.COMMIT:
            with self.lock:
                if self._saved is None:
                    raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                         "COMMIT: no config was saved with VERIFY_AND_SAVE")
                stored, loaded = self._saved
                self._saved = None
                self._active = _Active.build(stored, loaded)
                self._notify_pipeline()
        elif action == Set.VERIFY_AND_COMMIT:
            loaded = self._verify(config)
            active = _Active.build(self._stored_config(config, loaded), loaded)
            with self.lock:
                self._active, self._saved = active, None
                self._notify_pipeline()
        elif action == Set.RECONCILE_AND_COMMIT:
            loaded = self._verify(config)
            active = _Active.build(self._stored_config(config, loaded), loaded)
            with self.lock:
                old, self._active = self._active, active
                if old is not None:
                    self._reconcile(old, active)
                self._notify_pipeline()
        else:
            raise invalid(f"SetForwardingPipelineConfig: action {action} is not one of VERIFY, "
                          "VERIFY_AND_SAVE, VERIFY_AND_COMMIT, COMMIT, RECONCILE_AND_COMMIT")

    def _notify_pipeline(self) -> None:
        if self.pipeline_listener is not None:
            self.pipeline_listener(None if self._active is None else self._active.loaded.pipeline)

    @staticmethod
    def _packet_lock(active: _Active) -> Any:
        """The executor's packet lock (``Pipeline.lock``): held around a Write batch or a
        Read, it keeps a port loop that runs packets without ``Device.lock`` (the native
        C loop) from seeing part of a batch or a torn read."""
        lock = getattr(getattr(active.loaded.pipeline, "pipeline", None), "lock", None)
        return lock if lock is not None and hasattr(lock, "__enter__") else contextlib.nullcontext()

    def load(self, device_config: bytes, p4info: p4i.P4Info | None = None) -> None:
        """Commit a pipeline given locally (the command line's program)."""
        config = p4r.ForwardingPipelineConfig(p4_device_config=device_config)
        if p4info is not None:
            config.p4info.CopyFrom(p4info)
        self.set_pipeline(Set.VERIFY_AND_COMMIT, config)

    @staticmethod
    def _stored_config(config: p4r.ForwardingPipelineConfig, loaded: LoadedConfig
                       ) -> p4r.ForwardingPipelineConfig:
        stored = p4r.ForwardingPipelineConfig()
        stored.CopyFrom(config)
        if not config.HasField("p4info"):
            stored.p4info.CopyFrom(loaded.p4info)
        return stored

    def _reconcile(self, old: _Active, new: _Active) -> None:
        """Replay the old forwarding state into the new pipeline; drop what no longer fits."""
        updates: list[p4r.Update] = []
        for members in old.profiles.members.values():
            for member in members.values():
                updates.append(p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(action_profile_member=member)))
        for groups in old.profiles.groups.values():
            for group in groups.values():
                updates.append(p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(action_profile_group=group)))
        for table in old.tables.entries.values():
            for installed in table.values():
                if installed.handle is not None:
                    updates.append(p4r.Update(type=p4r.Update.INSERT,
                                              entity=p4r.Entity(table_entry=installed.entry)))
        for table_id in old.tables.default_indirect:
            default = old.tables._default_entry(old.schema.table(table_id))
            updates.append(p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(table_entry=default)))
        for table_id, action in old.tables.default_modified.items():
            entry = p4r.TableEntry(table_id=table_id, is_default_action=True)
            entry.action.action.CopyFrom(action)
            updates.append(p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(table_entry=entry)))
        for group in old.externs.groups.values():
            pre = p4r.PacketReplicationEngineEntry(multicast_group_entry=group)
            updates.append(p4r.Update(type=p4r.Update.INSERT,
                                      entity=p4r.Entity(packet_replication_engine_entry=pre)))
        for session in old.externs.sessions.values():
            pre = p4r.PacketReplicationEngineEntry(clone_session_entry=session)
            updates.append(p4r.Update(type=p4r.Update.INSERT,
                                      entity=p4r.Entity(packet_replication_engine_entry=pre)))
        for result, update in zip(self._apply(new, updates), updates):
            if result is not None:
                LOG.warning("RECONCILE_AND_COMMIT dropped state: %s", result.message)

    def get_pipeline(self, response_type: int) -> p4r.ForwardingPipelineConfig:
        """The committed config, trimmed to ``response_type``."""
        with self.lock:
            active = self._active
        if active is None:
            raise no_pipeline()
        out = p4r.ForwardingPipelineConfig()
        if active.config.HasField("cookie"):
            out.cookie.CopyFrom(active.config.cookie)
        if response_type in (Get.ALL, Get.P4INFO_AND_COOKIE):
            out.p4info.CopyFrom(active.config.p4info)
        if response_type in (Get.ALL, Get.DEVICE_CONFIG_AND_COOKIE):
            out.p4_device_config = active.config.p4_device_config
        if response_type not in (Get.ALL, Get.COOKIE_ONLY, Get.P4INFO_AND_COOKIE,
                                 Get.DEVICE_CONFIG_AND_COOKIE):
            raise invalid(f"GetForwardingPipelineConfig: unknown response_type {response_type}")
        return out

    def schema(self) -> Schema:
        """Schema of the committed pipeline, or FAILED_PRECONDITION."""
        active = self._active
        if active is None:
            raise no_pipeline()
        return active.schema

    # -- write / read --------------------------------------------------------------------

    def write(self, updates: Iterable[p4r.Update],
              atomicity: int = p4r.WriteRequest.CONTINUE_ON_ERROR) -> list[P4RuntimeError | None]:
        """Apply a batch; one result per update (None = success).

        CONTINUE_ON_ERROR tries every update. ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC stop
        at the first failure and undo the updates applied before it
        (:mod:`innet.switch.p4runtime.rollback`); the lock held for the whole batch keeps
        packets from seeing any intermediate state, so both are data-plane atomic here."""
        _enum_name(p4r.WriteRequest.Atomicity, atomicity, "Write atomicity")
        with self.lock:
            active = self._active
            if active is None:
                raise no_pipeline()
            with self._packet_lock(active):
                if atomicity == p4r.WriteRequest.CONTINUE_ON_ERROR:
                    return self._apply(active, list(updates))
                return self._apply_all_or_none(active, list(updates))

    def _apply_all_or_none(self, active: _Active, updates: list[p4r.Update]) -> list[P4RuntimeError | None]:
        undo_log: list[list[p4r.Update]] = []
        for index, update in enumerate(updates):
            undo = rollback.inverse(update, lambda key: list(self._read_one(active, key)))
            error = self._apply(active, [update])[0]
            if error is None:
                undo_log.append(undo)
                continue
            for undo_updates in reversed(undo_log):
                for failed in (r for r in self._apply(active, undo_updates) if r is not None):
                    LOG.error("rolling back a failed batch: undo update failed: %s", failed.message)
                    error = P4RuntimeError(grpc.StatusCode.INTERNAL,
                                           f"{error.message}; rolling back the batch failed too "
                                           f"({failed.code.name}: {failed.message}): state may be partial")
            results: list[P4RuntimeError | None] = [rollback.aborted(index)] * len(updates)
            results[index] = error
            return results
        return [None] * len(updates)

    def _apply(self, active: _Active, updates: list[p4r.Update]) -> list[P4RuntimeError | None]:
        """One result per update. A kept error drops its traceback: it would hold the
        frames (and the request's entities) of every failed update of a huge batch alive
        until the reply is sent (100k failing updates took 400 MB)."""
        results: list[P4RuntimeError | None] = []
        for update in updates:
            try:
                self._apply_one(active, update)
                results.append(None)
            except P4RuntimeError as error:
                results.append(error.with_traceback(None))
            except TargetError as error:
                results.append(invalid(str(error)))
            except Exception as error:  # a target bug must not kill the server
                LOG.exception("write of %s failed inside the target", update.entity.WhichOneof("entity"))
                results.append(P4RuntimeError(grpc.StatusCode.INTERNAL,
                                              f"target failure: {type(error).__name__}: {error}"))
        return results

    def _apply_one(self, active: _Active, update: p4r.Update) -> None:
        kind = update.type
        if kind not in (p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE):
            raise invalid(f"update type {kind} is not INSERT, MODIFY or DELETE")
        entity = update.entity
        which = entity.WhichOneof("entity")
        if which is None:
            raise invalid("update has no entity")
        ext, prof = active.externs, active.profiles
        writers: dict[str, Callable[[Any, Any], None]] = {
            "table_entry": active.tables.write,
            "counter_entry": ext.write_counter,
            "direct_counter_entry": ext.write_direct_counter,
            "meter_entry": ext.write_meter,
            "direct_meter_entry": ext.write_direct_meter,
            "register_entry": ext.write_register,
            "extern_entry": ext.write_extern,
            "packet_replication_engine_entry": ext.write_pre,
            "digest_entry": ext.write_digest,
            "action_profile_member": prof.write_member,
            "action_profile_group": prof.write_group,
        }
        writer = writers.get(which)
        if writer is None:
            raise unimplemented(f"{which} entities are not supported by innet's target")
        writer(kind, getattr(entity, which))
        if which == "digest_entry":
            if kind == p4r.Update.DELETE:
                active.digests.forget(entity.digest_entry.digest_id)
            elif self.digest_wakeup is not None:
                self.digest_wakeup()  # a new max_timeout_ns may move the next deadline

    def read(self, entities: Iterable[p4r.Entity]) -> list[p4r.Entity]:
        """All entities selected by the (possibly wildcard) ``entities``."""
        with self.lock:
            active = self._active
            if active is None:
                raise no_pipeline()
            out: list[p4r.Entity] = []
            with self._packet_lock(active):
                for entity in entities:
                    out.extend(self._read_one(active, entity))
            return out

    def _read_one(self, active: _Active, entity: p4r.Entity) -> Iterator[p4r.Entity]:
        which = entity.WhichOneof("entity")
        if which is None:
            raise invalid("read request entity has no type")
        ext, prof = active.externs, active.profiles
        readers: dict[str, Callable[[Any], Iterable[Any]]] = {
            "table_entry": active.tables.read,
            "counter_entry": ext.read_counter,
            "direct_counter_entry": ext.read_direct_counter,
            "meter_entry": ext.read_meter,
            "direct_meter_entry": ext.read_direct_meter,
            "register_entry": ext.read_register,
            "extern_entry": ext.read_extern,
            "packet_replication_engine_entry": ext.read_pre,
            "digest_entry": ext.read_digest,
            "action_profile_member": prof.read_member,
            "action_profile_group": prof.read_group,
        }
        reader = readers.get(which)
        if reader is None:
            raise unimplemented(f"reading {which} entities is not supported by innet's target")
        for found in reader(getattr(entity, which)):
            yield p4r.Entity(**{which: found})

    # -- packets -------------------------------------------------------------------------

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run a packet from ``port``; return outputs for real ports.

        Outputs to the CPU port and digests go to ``controller_sink`` (dropped when no
        pipeline is set: the switch drops everything until configured, like BMv2).
        """
        with self.lock:
            active = self._active
            if active is None:
                return []
            outputs = active.loaded.pipeline.process(port, data)
            digests = active.loaded.pipeline.take_digests()
            messages = self._controller_messages(active, outputs, digests)
            real = [(p, d) for p, d in outputs if p != self.cpu_port]
        sink = self.controller_sink
        if sink is not None:
            for message in messages:
                sink(message)
        return real

    def _controller_messages(self, active: _Active, outputs: list[tuple[int, bytes]],
                             digests: list) -> list[p4r.StreamMessageResponse]:
        messages = []
        header = active.schema.packet_header("packet_in")
        for port, data in outputs:
            if port == self.cpu_port:
                try:
                    messages.append(p4r.StreamMessageResponse(packet=unpack_packet_in(header, data)))
                except P4RuntimeError as error:
                    LOG.warning("dropped packet to CPU port: %s", error.message)
        for digest in digests:
            found = active.externs.digest_data(digest)
            if found is None:
                LOG.debug("digest %s dropped: not configured by a DigestEntry", digest.name)
                continue
            digest_id, data = found
            lists = active.digests.add(digest_id, active.externs.digest_configs[digest_id], data,
                                       time.monotonic_ns())
            messages.extend(p4r.StreamMessageResponse(digest=dl) for dl in lists)
            if not lists and self.digest_wakeup is not None:
                self.digest_wakeup()
        return messages

    def deliver_from_ports(self, cpu_frames: list[bytes]) -> None:
        """Frames a C port loop sent to the CPU port, and the digests its batches left in
        the native pipeline, go to ``controller_sink`` as in ``process``."""
        with self.lock:
            active = self._active
            if active is None:
                return
            collect = getattr(getattr(active.loaded.pipeline, "pipeline", None), "collect_digests", None)
            if collect is not None:
                collect()
            digests = active.loaded.pipeline.take_digests()
            outputs = [(self.cpu_port, f) for f in cpu_frames] if self.cpu_port is not None else []
            messages = self._controller_messages(active, outputs, digests)
        sink = self.controller_sink
        if sink is not None:
            for message in messages:
                sink(message)

    def flush_digests(self, now_ns: int | None = None) -> float | None:
        """Send the digest lists whose ``max_timeout_ns`` passed; seconds until the next
        one is due (None when no list is open)."""
        now = time.monotonic_ns() if now_ns is None else now_ns
        with self.lock:
            active = self._active
            if active is None:
                return None
            configs = active.externs.digest_configs
            lists = active.digests.due(configs, now)
            deadline = active.digests.next_deadline_ns(configs)
        sink = self.controller_sink
        if sink is not None:
            for dl in lists:
                sink(p4r.StreamMessageResponse(digest=dl))
        return None if deadline is None else max(0.0, (deadline - now) / 1e9)

    def sweep_idle_timeouts(self) -> int:
        """One ageing sweep: send an ``IdleTimeoutNotification`` per table with entries
        idle for their ``idle_timeout_ns`` to ``controller_sink``; returns how many."""
        with self.lock:
            active = self._active
            if active is None:
                return 0
            messages = ageing.expired(active.tables)
        sink = self.controller_sink
        if sink is not None:
            for message in messages:
                sink(p4r.StreamMessageResponse(idle_timeout_notification=message))
        return len(messages)

    def digest_ack(self, ack: p4r.DigestListAck) -> bool:
        """Apply a DigestListAck; False when the list is unknown (acked before or expired)."""
        with self.lock:
            active = self._active
            return active is not None and active.digests.ack(ack.digest_id, ack.list_id)

    def packet_out(self, packet: p4r.PacketOut) -> list[tuple[int, bytes]]:
        """Inject a PacketOut on the CPU port; return outputs for real ports."""
        with self.lock:
            active = self._active
            if active is None:
                raise no_pipeline()
            if self.cpu_port is None:
                raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                     "PacketOut: the switch was started without --cpu-port")
            data = pack_packet_out(active.schema.packet_header("packet_out"), packet)
        return self.process(self.cpu_port, data)
