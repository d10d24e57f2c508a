"""The target protocol over innet's executor (``innet.switch.pipeline.Pipeline``).

Device configs: innet's ``innet-device-config/1`` JSON (``innet.switch.device_config``)
or P4 source text. The front-end rebuilds the program and its P4Info; a config whose
P4Info digest differs from the rebuilt one is rejected. When the controller sends its own
P4Info, every object it names must exist in the program with the same widths, match
kinds and sizes (``p4info_match``: the P4Runtime layer validates with the controller's
P4Info, the pipeline runs the program).

Multi-replica clone sessions are realised as a hidden multicast group numbered
``HIDDEN_GROUP_BASE + session`` (above the 16-bit ``mcast_grp`` range, so no P4 program
can address it), as BMv2's PI does with its reserved groups.
"""

from __future__ import annotations

import functools
import logging
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from finsy.proto import p4i

from innet.switch.p4runtime.embedded_profiles import InnetProfiles, key_specs, unpack_handle
from innet.switch.p4runtime.p4info_match import check_p4info_matches
from innet.switch.p4runtime.target_api import (
    BoundAction,
    ProgramEntry,
    Digest,
    EntryHandle,
    ExactMatch,
    FieldMatch,
    LoadedConfig,
    LpmMatch,
    MatchKey,
    MeterRates,
    OptionalMatch,
    RangeMatch,
    PreReplica,
    TargetError,
    TernaryMatch,
)

LOG = logging.getLogger(__name__)

HIDDEN_GROUP_BASE = 1 << 16
US_PER_S = 1_000_000



F = TypeVar("F", bound=Callable[..., Any])


def _control_plane(method: F) -> F:
    """Re-raise the executor's control-plane errors as TargetError (a per-update error)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from innet.switch.pipeline import PipelineError
        from innet.switch.pipeline.errors import ControlPlaneError

        try:
            return method(*args, **kwargs)
        except (ControlPlaneError, PipelineError) as error:
            raise TargetError(str(error)) from None

    return wrapper  # type: ignore[return-value]


class InnetPipeline(InnetProfiles):
    """``LoadedPipeline`` (and ``ProfilePipeline``) over one ``Pipeline``."""

    def __init__(self, pipeline: Any, p4info: p4i.P4Info) -> None:
        self.pipeline = pipeline
        self._entries: dict[EntryHandle, Any] = {}
        """The executor's entry of each handle handed out (direct resources, hit times)."""
        self._initial_defaults = {
            name: (t.default_entry.action, tuple(t.default_entry.params))
            for name, t in pipeline.tables.items()
        }
        self._digest_members = {
            d.preamble.name: [m.name for m in p4info.type_info.structs[d.type_spec.struct.name].members]
            for d in p4info.digests if d.type_spec.HasField("struct")
        }

    def _table(self, name: str) -> Any:
        return self.pipeline.table(name)

    def _fix_optional(self, table: Any, specs: list[Any]) -> list[Any]:
        from innet.switch.pipeline import KeySpec

        out = []
        for kd, ks in zip(table.keys, specs):
            if ks.mask == -1:
                ks = KeySpec(ks.value, mask=(1 << kd.width) - 1)
            out.append(ks)
        return out

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        return self.pipeline.process(port, data)

    @_control_plane
    def table_insert(self, table: str, key: MatchKey, priority: int, action: BoundAction) -> EntryHandle:
        t = self._table(table)
        specs = self._fix_optional(t, key_specs(key))
        handle = (table, tuple(specs), priority)
        self._entries[handle] = t.insert(specs, action.action, action.args, priority)
        return handle

    def _entry(self, handle: EntryHandle) -> Any:
        entry = self._entries.get(handle)
        if entry is None:
            table, specs, priority = unpack_handle(handle)
            entry = self._table(table)._find(list(specs), priority)[1]
        return entry

    @_control_plane
    def table_modify(self, table: str, handle: EntryHandle, action: BoundAction) -> None:
        _, specs, priority = unpack_handle(handle)
        self._table(table).modify(list(specs), action.action, action.args, priority)

    @_control_plane
    def table_delete(self, table: str, handle: EntryHandle) -> None:
        _, specs, priority = unpack_handle(handle)
        self._table(table).delete(list(specs), priority)
        self._entries.pop(handle, None)

    @_control_plane
    def table_set_default(self, table: str, action: BoundAction | None) -> None:
        t = self._table(table)
        if action is None:
            name, args = self._initial_defaults[t.name]
            t.set_default(name, args)
        else:
            t.set_default(action.action, action.args)

    def clock_ns(self) -> int:
        return int(self.pipeline.clock())

    @_control_plane
    def table_last_hits(self, table: str, handles: Sequence[EntryHandle]) -> list[int]:
        t = self._table(table)
        if t.clock is None:
            raise TargetError(f"table {table!r} does not support idle timeout (no support_timeout = true)")
        with self.pipeline.lock:  # the native executor syncs entry state from C under it
            return [self._entry(h).last_hit for h in handles]

    def table_get_default(self, table: str) -> BoundAction:
        e = self._table(table).default_entry
        return BoundAction(e.action, tuple(e.params))

    def table_const_entries(self, table: str) -> list[ProgramEntry]:
        t = self._table(table)
        if not t.const:
            return []
        out = []
        for e in t.list_entries():
            key: list[FieldMatch] = []
            for kd, m in zip(t.keys, e.match):
                if kd.kind == "exact":
                    key.append(ExactMatch(m))
                elif kd.kind == "lpm":
                    key.append(LpmMatch(m[0], m[1]))
                elif kd.kind == "ternary":
                    key.append(TernaryMatch(m[0], m[1]))
                elif kd.kind == "optional":
                    key.append(OptionalMatch(m[0] if m[1] else None))
                else:
                    key.append(RangeMatch(m[0], m[1]))
            out.append(ProgramEntry(tuple(key), e.priority, BoundAction(e.action, tuple(e.params))))
        return out

    @_control_plane
    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        packets, nbytes = self.pipeline.counter(name).read(index)
        return nbytes, packets

    @_control_plane
    def counter_write(self, name: str, index: int, byte_count: int, packet_count: int) -> None:
        self.pipeline.counter(name).write(index, packet_count, byte_count)

    def direct_counter_read(self, table: str, handle: EntryHandle) -> tuple[int, int]:
        with self.pipeline.lock:
            e = self._entry(handle)
            return e.bytes, e.packets

    @_control_plane
    def direct_counter_write(self, table: str, handle: EntryHandle, byte_count: int,
                             packet_count: int) -> None:
        with self.pipeline.lock:
            e = self._entry(handle)
            e.bytes, e.packets = byte_count, packet_count

    @_control_plane
    def meter_set(self, name: str, index: int, rates: MeterRates | None) -> None:
        from innet.switch.pipeline.externs import MeterCell

        meter = self.pipeline.meter(name)
        if rates is None:
            meter.cells[index] = MeterCell()
        else:
            meter.set_rates(index, rates.cir / US_PER_S, rates.cburst, rates.pir / US_PER_S, rates.pburst)

    def direct_meter_set(self, table: str, handle: EntryHandle, rates: MeterRates | None) -> None:
        from innet.switch.pipeline.externs import MeterCell

        with self.pipeline.lock:
            e = self._entry(handle)
            if rates is None:
                e.meter = MeterCell()
            else:
                e.meter = MeterCell(rates.cir / US_PER_S, rates.cburst, rates.pir / US_PER_S, rates.pburst,
                                    True, float(rates.cburst), float(rates.pburst), None)

    @_control_plane
    def register_read(self, name: str, index: int) -> int:
        return int(self.pipeline.register(name).read(index))

    @_control_plane
    def register_write(self, name: str, index: int, value: int) -> None:
        self.pipeline.register(name).write(index, value)

    @_control_plane
    def register_read_range(self, name: str, start: int, n: int) -> list[int]:
        with self.pipeline.lock:
            return self.pipeline.register(name).read_range(start, n)

    @_control_plane
    def register_write_range(self, name: str, start: int, values: Sequence[int]) -> None:
        with self.pipeline.lock:
            self.pipeline.register(name).write_range(start, values)

    @_control_plane
    def multicast_group_set(self, group: int, replicas: Sequence[PreReplica]) -> None:
        self.pipeline.pre.set_group(group, [(r.instance, r.port) for r in replicas])

    @_control_plane
    def multicast_group_delete(self, group: int) -> None:
        pre = self.pipeline.pre
        pre.set_group(group, [])
        pre.group_delete(group)

    @_control_plane
    def clone_session_set(self, session: int, replicas: Sequence[PreReplica], class_of_service: int,
                          truncate: int) -> None:
        from innet.switch.pipeline.pre import CloneSession

        pre = self.pipeline.pre
        hidden = HIDDEN_GROUP_BASE + session
        if hidden in pre.groups:
            pre.set_group(hidden, [])
            pre.group_delete(hidden)
        if len(replicas) == 1 and replicas[0].instance == 0:
            pre.sessions[session] = CloneSession(port=replicas[0].port, truncate=truncate)
        else:
            pre.set_group(hidden, [(r.instance, r.port) for r in replicas])
            pre.sessions[session] = CloneSession(mcast_grp=hidden, truncate=truncate)

    @_control_plane
    def clone_session_delete(self, session: int) -> None:
        pre = self.pipeline.pre
        hidden = HIDDEN_GROUP_BASE + session
        if hidden in pre.groups:
            pre.set_group(hidden, [])
            pre.group_delete(hidden)
        pre.mirroring_delete(session)

    def take_digests(self) -> list[Digest]:
        out = []
        for msg in self.pipeline.pop_digests():
            names = self._digest_members.get(msg.name)
            values = tuple(msg.fields[n] for n in names) if names else tuple(msg.fields.values())
            out.append(Digest(msg.name, values))
        return out


class InnetTarget:
    """Builds ``InnetPipeline``s from innet device configs or P4 source."""

    def __init__(self, include_dirs: tuple[Path, ...] = (), clock: Callable[[], int] = time.monotonic_ns,
                 executor: str = "python") -> None:
        self.include_dirs = include_dirs
        self.clock = clock
        """Monotonic ns of the pipelines' entry hit times (tests inject their own)."""
        self.executor = executor
        """``native``, ``python`` or ``auto`` (``innet.switch.native.select``)."""

    def load(self, p4info: p4i.P4Info | None, device_config: bytes) -> LoadedConfig:
        from innet.switch.native.select import load_pipeline
        from innet.switch.startcache import no_gc

        with no_gc(keep=True):  # a program's objects all live on: no collection, then frozen
            program, derived = self._compile(device_config)
            try:
                pipeline = load_pipeline(program, self.executor, clock=self.clock)
            except Exception as error:
                raise TargetError(f"cannot load the program: {error}") from None
        LOG.info("program loaded on the %s executor", getattr(pipeline, "executor", "python"))
        if p4info is not None:
            check_p4info_matches(p4info, derived)
        info = p4info if p4info is not None else derived
        return LoadedConfig(info, InnetPipeline(pipeline, derived))

    def _compile(self, data: bytes) -> tuple[Any, p4i.P4Info]:
        from innet.switch import device_config as dc
        from innet.switch.p4rt_codec.device_configs import BMV2_JSON_REFUSAL, config_kind

        if config_kind(data) == "bmv2":  # before parsing: megabytes of JSON innet never runs
            raise TargetError(BMV2_JSON_REFUSAL)
        if data.lstrip()[:1] == b"{":
            try:
                config = dc.DeviceConfig.from_bytes(data)
            except dc.DeviceConfigError as error:
                raise TargetError(str(error)) from None
            source, name = config.source, f"{config.program}.p4"
        else:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise TargetError("device config is neither an innet device config (JSON) nor P4 "
                                  f"source text (starts with {data[:16]!r})") from None
            config, source, name = None, text, "program.p4"
        with tempfile.TemporaryDirectory(prefix="innet-switch-") as tmp:
            path = Path(tmp) / name
            path.write_text(source)
            try:
                built = dc.build(path, tuple(self.include_dirs))
            except Exception as error:  # front-end errors carry file:line:col
                raise TargetError(f"cannot compile the program: {error}") from None
        if config is not None and built.config.p4info_sha256 != config.p4info_sha256:
            raise TargetError("device config was compiled by a different front-end: its P4Info "
                              f"digest {config.p4info_sha256[:12]}... differs from "
                              f"{built.config.p4info_sha256[:12]}... rebuilt here")
        return built.program, built.p4info
