"""``Pipeline``: a loaded v1model program plus its switch state, addressed by control-plane name."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..frontend import ir
from .compiler import ProgramCompiler
from innet.names import by_suffix, did_you_mean

from .errors import ControlPlaneError, PacketError
from .externs import Counter, DigestMessage, Meter, Register
from .pre import ReplicationEngine
from .profiles import ActionProfile
from .tables import Entry, KeySpec, Table
from .v1model import Architecture

T = TypeVar("T")
MAX_PORT = 511
"""Largest port number of v1model's bit<9> port fields."""


def resolve(kind: str, name: str, objects: dict[str, T]) -> T:
    """The object named ``name`` exactly, or by a unique dotted suffix (``ipv4_lpm`` for
    ``MyIngress.ipv4_lpm``); raises ControlPlaneError naming near matches otherwise."""
    hits = by_suffix(name, objects)
    if len(hits) == 1:
        return objects[hits[0]]
    if len(hits) > 1:
        raise ControlPlaneError(f"{kind} name '{name}' is ambiguous: {', '.join(sorted(hits))}")
    raise ControlPlaneError(
        f"no {kind} named '{name}' (have: {', '.join(sorted(objects)) or 'none'})."
        + did_you_mean(name, objects)
    )


class Pipeline:
    """A v1model program compiled for execution, with explicit state objects.

    ``process`` is a pure function of (state, port, bytes). Every control-plane method
    takes ``self.lock``; use ``with pipeline.atomic():`` to apply several updates so that
    no packet sees a partial batch.
    """

    executor = "python"
    """Which executor runs the packets (``NativePipeline`` says ``native``)."""
    packet_code = True
    """Generate the python packet path (an executor that runs packets itself compiles
    the control plane only: ``ProgramCompiler(packet_code=False)``)."""

    def __init__(self, program: ir.Program, *, seed: int | None = None,
                 digest_sink: Callable[[DigestMessage], None] | None = None,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.program = program
        self.clock = clock
        """Monotonic nanoseconds: the hit times of entries of ``support_timeout`` tables."""
        self.compiled = ProgramCompiler(program, seed=seed, clock=clock, packet_code=self.packet_code).compile()
        self.pre = ReplicationEngine()
        self.arch = Architecture(self.compiled, self.pre, digest_sink)
        self.lock = self.arch.lock
        for table in self.compiled.tables.values():
            table.lock = self.lock
        for profile in self.compiled.profiles.values():
            profile.lock = self.lock

    @classmethod
    def load(cls, program: ir.Program, **kw: Any) -> "Pipeline":
        """Same as ``Pipeline(program)``."""
        return cls(program, **kw)

    @classmethod
    def from_file(cls, path: str | Path, include_dirs: Sequence[str | Path] = (),
                  defines: dict[str, str | None] | None = None, **kw: Any) -> "Pipeline":
        """Compile a P4 file with the front-end and load it (raises P4Error/UnsupportedError)."""
        from ..frontend import compile_file  # type: ignore[attr-defined]

        return cls(compile_file(str(path), include_dirs=tuple(str(d) for d in include_dirs), defines=defines), **kw)

    # ------------------------------------------------------------------ data plane
    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet; returns the output packets ``[(port, bytes), ...]``.

        ``port`` must fit ``standard_metadata.ingress_port`` (bit<9>); anything else would
        silently be truncated into another port, so it is a PacketError."""
        if not 0 <= port <= MAX_PORT:
            raise PacketError(f"ingress port {port} is outside 0..{MAX_PORT} (bit<9>)")
        return self.arch.process(port, data)

    def process_burst(self, packets: Sequence[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """Run packets that arrive back to back (as p4c's STF driver feeds simple_switch
        from pcap files); outputs in emission order. Unlike calling ``process`` per packet,
        recirculated packets re-enter ingress after every input of the burst (see
        ``Architecture.process_burst``)."""
        return self.arch.process_burst(packets)

    @contextlib.contextmanager
    def atomic(self) -> Iterator["Pipeline"]:
        """Hold the packet lock for a batch of control-plane updates."""
        with self.lock:
            yield self

    # ------------------------------------------------------------------ objects by name
    @property
    def tables(self) -> dict[str, Table]:
        return self.compiled.tables

    @property
    def registers(self) -> dict[str, Register]:
        return self.compiled.registers

    @property
    def counters(self) -> dict[str, Counter]:
        return self.compiled.counters

    @property
    def meters(self) -> dict[str, Meter]:
        return self.compiled.meters

    @property
    def action_profiles(self) -> dict[str, ActionProfile]:
        return self.compiled.profiles

    def action_profile(self, name: str) -> ActionProfile:
        """An ``action_profile``/``action_selector`` by name: members and groups."""
        return resolve("action profile", name, self.compiled.profiles)

    def table(self, name: str) -> Table:
        return resolve("table", name, self.compiled.tables)

    def register(self, name: str) -> Register:
        return resolve("register", name, self.compiled.registers)

    def counter(self, name: str) -> Counter:
        return resolve("counter", name, self.compiled.counters)

    def meter(self, name: str) -> Meter:
        return resolve("meter", name, self.compiled.meters)

    def direct_counter(self, name: str) -> Table:
        """The table owning direct counter ``name`` (its entries carry packets/bytes)."""
        return resolve("direct counter", name, self.compiled.direct_counters)

    def direct_meter(self, name: str) -> tuple[Meter, Table]:
        return resolve("direct meter", name, self.compiled.direct_meters)

    # ------------------------------------------------------------------ tables
    def table_insert(self, table: str, keys: Sequence[KeySpec], action: str = "",
                     params: Sequence[int] | dict[str, int] = (), priority: int = 0, *,
                     member: int | None = None, group: int | None = None) -> Entry:
        """Add an entry running ``action(params)``, or (indirect tables) pointing to an
        action-profile ``member`` or action-selector ``group``."""
        with self.lock:
            t = self.table(table)
            if member is not None or group is not None:
                return t.insert_indirect(keys, member=member, group=group, priority=priority)
            return t.insert(keys, action, params, priority)

    def table_modify(self, table: str, keys: Sequence[KeySpec], action: str = "",
                     params: Sequence[int] | dict[str, int] = (), priority: int = 0, *,
                     member: int | None = None, group: int | None = None) -> Entry:
        with self.lock:
            t = self.table(table)
            if member is not None or group is not None:
                return t.modify_indirect(keys, member=member, group=group, priority=priority)
            return t.modify(keys, action, params, priority)

    def table_delete(self, table: str, keys: Sequence[KeySpec], priority: int = 0) -> None:
        with self.lock:
            self.table(table).delete(keys, priority)

    def table_set_default(self, table: str, action: str, params: Sequence[int] | dict[str, int] = ()) -> None:
        with self.lock:
            self.table(table).set_default(action, params)

    def table_entries(self, table: str) -> list[Entry]:
        with self.lock:
            return self.table(table).list_entries()

    # ------------------------------------------------------------------ registers, counters, meters
    def register_read(self, name: str, index: int | None = None) -> int | list[int]:
        """One cell, or all cells when ``index`` is None."""
        with self.lock:
            r = self.register(name)
            return r.read_all() if index is None else r.read(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        with self.lock:
            self.register(name).write(index, value)

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        with self.lock:
            return self.counter(name).read(index)

    def meter_set_rates(self, name: str, index: int, cir: float, cburst: int, pir: float, pburst: int) -> None:
        """Rates in units per microsecond, bursts in units (BMv2's ``meter_set_rates``)."""
        with self.lock:
            self.meter(name).set_rates(index, cir, cburst, pir, pburst)

    # ------------------------------------------------------------------ PRE and digests
    def mc_group_create(self, grp: int) -> None:
        with self.lock:
            self.pre.group_create(grp)

    def mc_node_create(self, rid: int, ports: Sequence[int]) -> int:
        with self.lock:
            return self.pre.node_create(rid, list(ports))

    def mc_node_associate(self, grp: int, handle: int) -> None:
        with self.lock:
            self.pre.node_associate(grp, handle)

    def mc_set_group(self, grp: int, replicas: Sequence[tuple[int, int]]) -> None:
        """Set group ``grp`` to ``(rid, port)`` replicas (P4Runtime MulticastGroupEntry)."""
        with self.lock:
            self.pre.set_group(grp, list(replicas))

    def mirroring_add(self, session: int, port: int) -> None:
        with self.lock:
            self.pre.mirroring_add(session, port)

    def pop_digests(self) -> list[DigestMessage]:
        """Digest messages queued since the last call (when no ``digest_sink`` was given)."""
        with self.lock:
            out = list(self.arch.digest_queue)
            self.arch.digest_queue.clear()
            return out

    @property
    def source(self) -> str:
        """The generated Python source (for debugging)."""
        return self.compiled.source
