"""``NativePipeline``: the ``Pipeline`` API over generated C.

Why a subclass of the Python ``Pipeline``: the control plane (name resolution, key
normalisation, validation, error messages, const entries, P4Runtime glue) stays the
reference Python code, and only the data path and the state it writes move into C:

- tables: the Python ``Table`` objects keep the entries; every change marks the table
  dirty (its result cache is cleared on every change) and the table is pushed to C, in
  match order, before the lock is released or the next packet runs;
- the replication engine: a ``ReplicationEngine`` that marks itself dirty, pushed alike;
- registers, counters and meters live in C (``NativeRegister``/``NativeCounter``/
  ``NativeMeter`` read and write the C arrays); direct counters, direct meter cells and
  last-hit stamps live in the C entries and are copied back into the Python ``Entry``
  objects whenever the control plane takes the lock (direct meter cells the control
  plane replaced or changed go back into C on release);
- action profiles: the Python ``ActionProfile`` keeps members and groups; a change
  refreshes the tables using it, which pushes them (entries resolved to a member's
  action or to a group's places, which C picks from with the selector hash);
- digests are queued in C and turned into ``DigestMessage`` after each call.

Locking: ``pipeline.lock`` is a re-entrant lock whose outermost acquisition also takes the
C switch mutex (the one a C port loop takes per packet batch) and whose outermost release
pushes what changed, then releases it: an ``atomic()`` batch reaches the data path whole.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..frontend import ir
from ..pipeline.api import MAX_PORT, Pipeline
from ..pipeline.errors import ControlPlaneError, PacketError
from ..pipeline.externs import GREEN, Counter, DigestMessage, Meter, MeterCell, Register
from ..pipeline.pre import CloneSession, ReplicationEngine
from innet import native_build

from . import cgen
from .fuse import fuse_mode
from .crt import CDEF
from .wide import join, limbs_of, split


C_FLAGS = tuple("-O3" if f == "-O2" else f for f in native_build.SHARED_FLAGS) + ("-ffp-contract=off",)
"""The switch unit's flags: -O3 for gcc's loop vectorizer (and loop unswitching, which
takes register bounds checks out of rerolled loops); the rest as every shared object.
``-march=native`` is added when the host CPU can be named (``native_build.host_cpu``); with it the
compiler may fuse ``a * b + c`` into one FMA instruction, rounded once, which changes
the meters' token-bucket arithmetic against the python executor's doubles, so
contraction is off (integer code, all that is vectorised, is unaffected)."""


GCC_FLAGS = ("--param", "hot-bb-frequency-fraction=1000000")
"""gcc only: count every block reached at all as hot. gcc's guessed profile puts the
per-element loops of p4/innet (under eight nested conditions) below its hot threshold,
and a cold loop is optimised for size, so not vectorised."""


def build_flags() -> tuple[tuple[str, ...], str]:
    """(compiler flags, a comment line for the source naming what the flags depend on)."""
    flags = C_FLAGS
    if "clang" not in native_build.find_compiler().version.lower():
        flags += GCC_FLAGS
    return native_build.for_this_cpu(flags)
ACT_GROUP, NO_ACTION = 0xFFFE, 0xFFFF
"""C action words: a selector group (first data word: its offset), an emptied group."""


def _cell_to_c(cell: Any, c: Any) -> None:
    """A python ``MeterCell`` (or None: unconfigured) into a C ``mcell_t``."""
    if cell is None or not cell.configured:
        c.configured = 0
        return
    c.cir, c.pir, c.tc, c.tp = cell.cir, cell.pir, cell.tc, cell.tp
    c.cburst, c.pburst, c.configured = cell.cburst, cell.pburst, 1
    c.has_last = int(cell.last_us is not None)
    c.last = cell.last_us or 0.0


def _cell_state(cell: Any) -> Any:
    if cell is None:
        return None
    return (cell.cir, cell.cburst, cell.pir, cell.pburst, cell.configured, cell.tc, cell.tp, cell.last_us)


def _cell_from_c(cell: Any, c: Any) -> None:
    if not c.configured:
        return
    cell.tc, cell.tp = c.tc, c.tp
    cell.last_us = c.last if c.has_last else None


class _DirtyCache(dict):  # type: ignore[type-arg]
    """A table's result cache: ``clear()`` (every table change) marks the table dirty."""

    def __init__(self, owner: "NativePipeline", name: str) -> None:
        super().__init__()
        self.owner, self.name = owner, name

    def clear(self) -> None:
        self.owner._dirty_tables.add(self.name)


class _Sessions(dict):  # type: ignore[type-arg]
    def __init__(self, pre: "NativePRE") -> None:
        super().__init__()
        self.pre = pre

    def __setitem__(self, k: Any, v: Any) -> None:
        self.pre.dirty = True
        super().__setitem__(k, v)

    def __delitem__(self, k: Any) -> None:
        self.pre.dirty = True
        super().__delitem__(k)

    def pop(self, *a: Any) -> Any:
        self.pre.dirty = True
        return super().pop(*a)


class NativePRE(ReplicationEngine):
    """The replication engine; every mutation marks it for a push into C."""

    def __init__(self) -> None:
        super().__init__()
        self.dirty = True
        self.sessions = _Sessions(self)

    def __getattribute__(self, name: str) -> Any:
        attr = object.__getattribute__(self, name)
        if name in _PRE_MUTATORS:
            object.__setattr__(self, "dirty", True)
        return attr


_PRE_MUTATORS = frozenset({"group_create", "group_delete", "node_create", "node_update", "node_delete",
                           "node_associate", "node_dissociate", "set_group", "mirroring_add", "mirroring_add_mc",
                           "mirroring_delete"})


class NativeRegister(Register):
    """A register whose cells are C words: cell ``i`` is ``ptr[i * stride]`` (``stride``
    > 1: a column of a fused block, see ``fuse``)."""

    def __init__(self, name: str, size: int, width: int, signed: bool, ptr: Any, ffi: Any,
                 stride: int = 1) -> None:
        self.name, self.size, self.width, self.signed = name, size, width, signed
        self._ptr, self._ffi, self._stride = ptr, ffi, stride

    def _signed(self, v: int) -> int:
        return v - (1 << self.width) if self.signed and v >> (self.width - 1) else v

    @property
    def cells(self) -> list[int]:  # type: ignore[override]
        if not self.size:
            return []
        n = (self.size - 1) * self._stride + 1
        raw = memoryview(self._ffi.buffer(self._ptr, 8 * n)).cast("Q")[::self._stride].tolist()
        return [self._signed(v) for v in raw] if self.signed else raw

    def read(self, index: int) -> int:
        self._check(index)
        return self._signed(int(self._ptr[index * self._stride]))

    def write(self, index: int, value: int) -> None:
        self._check(index)
        self._ptr[index * self._stride] = value & ((1 << self.width) - 1)

    def read_all(self) -> list[int]:
        return self.cells

    def _words(self, start: int, n: int) -> memoryview:
        """Cells ``start..start+n-1`` as a writable view of C words (every ``stride``-th)."""
        span = (n - 1) * self._stride + 1 if n else 0
        words = memoryview(self._ffi.buffer(self._ptr + start * self._stride, 8 * span)).cast("Q")
        return words[::self._stride]

    def read_range(self, start: int, n: int) -> list[int]:
        self._check_range(start, n)
        return self._words(start, n).tolist()

    def write_range(self, start: int, values: Sequence[int]) -> None:
        import numpy as np

        self._check_range(start, len(values))
        cells = np.asarray(values, dtype=np.int64).astype(np.uint64) & np.uint64((1 << self.width) - 1)
        if self._stride == 1:
            self._ffi.memmove(self._ptr + start, cells.tobytes(), 8 * len(values))
            return
        np.asarray(self._words(start, len(values)))[:] = cells

    def reset(self) -> None:
        if self._stride == 1:
            self._ffi.memmove(self._ptr, bytes(8 * self.size), 8 * self.size)
            return
        for i in range(self.size):
            self._ptr[i * self._stride] = 0


class NativeWideRegister(NativeRegister):
    """A register of bit<W>/int<W> with W > 64: a cell is ``limbs`` words, low first."""

    def __init__(self, name: str, size: int, width: int, signed: bool, ptr: Any, ffi: Any) -> None:
        super().__init__(name, size, width, signed, ptr, ffi)
        self._k = limbs_of(width)

    @property
    def cells(self) -> list[int]:  # type: ignore[override]
        k = self._k
        raw = self._ffi.unpack(self._ptr, self.size * k)
        return [join(raw[i * k:(i + 1) * k], self.width, self.signed) for i in range(self.size)]

    def read(self, index: int) -> int:
        self._check(index)
        k = self._k
        return join(self._ffi.unpack(self._ptr + index * k, k), self.width, self.signed)

    def write(self, index: int, value: int) -> None:
        self._check(index)
        for j, x in enumerate(split(value, self.width)):
            self._ptr[index * self._k + j] = x

    def reset(self) -> None:
        self._ffi.memmove(self._ptr, bytes(8 * self.size * self._k), 8 * self.size * self._k)


class NativeCounter(Counter):
    """An indexed counter whose cells are the C arrays; reading views copy them out."""

    def __init__(self, name: str, size: int, kind: str, packets: Any, nbytes: Any, ffi: Any) -> None:
        super().__init__(name, size, kind, packets, nbytes)
        self._ffi = ffi

    @property
    def packets(self) -> list[int]:  # type: ignore[override]
        return list(self._ffi.unpack(self._p, self.size))

    @property
    def bytes(self) -> list[int]:  # type: ignore[override]
        return list(self._ffi.unpack(self._b, self.size))


def _monotonic_us() -> float:
    """The default meter clock (the python ``Meter``'s): C reads the same CLOCK_MONOTONIC."""
    return time.monotonic() * 1e6


class _Cells:
    """``meter.cells`` over the C cells: reads build a ``MeterCell``, writes store one."""

    def __init__(self, ptr: Any, size: int) -> None:
        self._ptr, self._size = ptr, size

    def __len__(self) -> int:
        return self._size

    def _check(self, i: int) -> None:
        if not 0 <= i < self._size:
            raise IndexError(i)

    def __getitem__(self, i: int) -> MeterCell:
        self._check(i)
        c = self._ptr[i]
        if not c.configured:
            return MeterCell()
        return MeterCell(c.cir, int(c.cburst), c.pir, int(c.pburst), True, c.tc, c.tp,
                         c.last if c.has_last else None)

    def __setitem__(self, i: int, cell: MeterCell) -> None:
        self._check(i)
        _cell_to_c(cell, self._ptr[i])

    def __iter__(self) -> Any:
        return (self[i] for i in range(self._size))


class NativeMeter(Meter):
    """An indexed meter whose cells are C ``mcell_t``s (a direct meter: size 0, the cells
    live with the table entries). ``clock`` may be replaced, as the python ``Meter``'s;
    an injected clock is read once per call into C (per ``process``)."""

    def __init__(self, name: str, size: int, kind: str, ptr: Any) -> None:
        self.name, self.size, self.kind = name, size, kind
        self.clock = _monotonic_us
        self.cells = _Cells(ptr, size)  # type: ignore[assignment]

    def execute(self, index: int, nbytes: int) -> int:
        if not 0 <= index < self.size:
            return GREEN
        cell = self.cells[index]
        color = cell.execute(self.clock(), 1 if self.kind == "packets" else nbytes)
        self.cells[index] = cell
        return color

    def set_rates(self, index: int, cir: float, cburst: int, pir: float, pburst: int) -> None:
        if not 0 <= index < self.size:
            raise ControlPlaneError(f"meter '{self.name}': index {index} out of range (size {self.size})")
        self.cells[index] = MeterCell(cir, cburst, pir, pburst, True, float(cburst), float(pburst), None)


class SyncLock:
    """Re-entrant; the outermost holder also holds the C switch mutex, and its release
    pushes dirty tables and PRE state into C first."""

    def __init__(self, owner: "NativePipeline") -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._owner = owner

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._lock.acquire(blocking, timeout):
            return False
        self._depth += 1
        if self._depth == 1:
            o = self._owner
            o.lib.sw_lock(o.sw)
            o._pull()
        return True

    def release(self) -> None:
        if self._depth == 1:
            o = self._owner
            try:
                o._push()
            finally:
                o.lib.sw_unlock(o.sw)
        self._depth -= 1
        self._lock.release()

    def __enter__(self) -> "SyncLock":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _generate(program: ir.Program, fuse: str | None, loops: bool) -> tuple[str, cgen.UnitMeta]:
    """``cgen.generate``, through the start-up cache when the program came from one
    (``program.cache_key``): a program started before skips code generation."""
    from innet.switch import startcache

    if not program.cache_key:
        return cgen.generate(program, fuse, loops)
    mode = fuse_mode(fuse)
    key = startcache.key("cgen", program.cache_key, mode, str(loops))
    cached = startcache.load("cgen", key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    out = cgen.generate(program, mode, loops)
    startcache.store("cgen", key, out)
    return out


class NativePipeline(Pipeline):
    """A v1model program executed by generated C (same public API as ``Pipeline``).

    Raises ``NativeUnsupported`` (file:line:col and the construct) for a program the
    native executor does not run, ``native_build.NativeBuildError`` without a working compiler."""

    executor = "native"
    packet_code = False

    def __init__(self, program: ir.Program, *, seed: int | None = None,
                 digest_sink: Callable[[DigestMessage], None] | None = None,
                 clock: Callable[[], int] = time.monotonic_ns, fuse: str | None = None,
                 loops: bool = True) -> None:
        source, meta = _generate(program, fuse, loops)
        files = program.source_files
        stem = "".join(ch if ch.isalnum() else "_" for ch in (files[0].rsplit("/", 1)[-1].rsplit(".", 1)[0]
                                                              if files else "program"))
        flags, built_for = build_flags()
        self.c_source = source = built_for + "\n" + source
        loaded = native_build.load_library(f"innet_sw_{stem}", source, CDEF, flags)
        self.ffi, self.lib = loaded.ffi, loaded.lib
        super().__init__(program, seed=seed, digest_sink=digest_sink, clock=clock)
        self.meta = meta
        self.digest_sink = digest_sink
        self._digests: list[DigestMessage] = []
        ffi, lib = self.ffi, self.lib
        self.sw = ffi.gc(lib.sw_new(seed or 0), lib.sw_free)
        self._dirty_tables: set[str] = set()
        self.lock = SyncLock(self)  # type: ignore[assignment]
        self.pre = NativePRE()
        self._tmeta = meta.tables
        for name, table in self.compiled.tables.items():
            table.lock = self.lock
            table.cache = _DirtyCache(self, name)
            if name not in meta.tables:  # a table no apply reaches: nothing runs it
                continue
        for prof in self.compiled.profiles.values():
            prof.lock = self.lock
        regs: dict[str, NativeRegister] = {}
        for i, (name, size, width, signed) in enumerate(meta.registers):
            if width > 64:  # never fused (``fuse._register``): a cell is limbs of a block of its own
                regs[name] = NativeWideRegister(name, size, width, signed, lib.sw_reg(self.sw, i), ffi)
            else:
                regs[name] = NativeRegister(name, size, width, signed, lib.sw_reg(self.sw, i), ffi,
                                            meta.reg_cells[i].stride)
        self.compiled.registers.clear()
        self.compiled.registers.update(regs)
        kinds = {n: c.kind for n, c in self.compiled.counters.items()}
        cnts = {}
        for i, (name, size) in enumerate(meta.counters):
            cnts[name] = NativeCounter(name, size, kinds.get(name, "packets"), lib.sw_cnt(self.sw, i, 0),
                                       lib.sw_cnt(self.sw, i, 1), ffi)
        self.compiled.counters.clear()
        self.compiled.counters.update(cnts)
        self._meters: list[NativeMeter] = []
        for i, (name, size, kind, direct) in enumerate(meta.meters):
            m = NativeMeter(name, size, kind, lib.sw_mtr(self.sw, i))
            self._meters.append(m)
            if direct:
                _, table = self.compiled.direct_meters[name]
                self.compiled.direct_meters[name] = (m, table)
            else:
                self.compiled.meters[name] = m
        self._timeout = any(tm.timeout for tm in meta.tables.values())
        self._meter_tables = [tm for tm in meta.tables.values() if tm.direct_meter]
        self._dirty_tables.update(meta.tables)
        with self.lock:
            pass

    # ------------------------------------------------------------------ state sync
    def _pull(self) -> None:
        """What the data path wrote since the last pull, into the Python entries: direct
        counts as deltas (so a control-plane write made meanwhile is kept), idle-timeout
        stamps and direct-meter buckets as values (unless the control plane replaced the
        entry's meter cell meanwhile)."""
        for name, tm in self._tmeta.items():
            if not (tm.direct_counter or tm.timeout or tm.direct_meter):
                continue
            table = self.compiled.tables[name]
            ents = getattr(table, "_native_order", None)
            if not ents:
                continue
            stride = cgen.ENT_HDR + 2 * tm.ncols + tm.nparams
            raw = self.ffi.unpack(self.lib.sw_tbl_entries(self.sw, tm.index), stride * len(ents))
            base = table._native_base  # type: ignore[attr-defined]
            for j, e in enumerate(ents):
                p, b = raw[j * stride + 2], raw[j * stride + 3]
                e.packets += p - base[j][0]
                e.bytes += b - base[j][1]
                base[j] = (p, b)
                if tm.timeout:
                    e.last_hit = raw[j * stride + 4]
            if tm.direct_meter:
                cells = self.lib.sw_tbl_meters(self.sw, tm.index)
                snap = table._native_msnap  # type: ignore[attr-defined]
                for j, e in enumerate(ents):
                    if e.meter is not None and snap[j][0] is e.meter and snap[j][1] == _cell_state(e.meter):
                        _cell_from_c(e.meter, cells[j])
                        snap[j] = (e.meter, _cell_state(e.meter))

    def _push(self) -> None:
        for name in self._dirty_tables:
            tm = self._tmeta.get(name)
            if tm is not None:
                self._push_table(tm)
        self._dirty_tables.clear()
        for tm in self._meter_tables:
            self._push_meters(tm)
        if isinstance(self.pre, NativePRE) and self.pre.dirty:
            self._push_pre()

    def _push_meters(self, tm: cgen.TableMeta, force: bool = False) -> None:
        """Direct meter cells the control plane changed (a new cell object or new
        values since the last sync) into C; the others are C's, newer than Python's."""
        table = self.compiled.tables[tm.cp_name]
        ents = getattr(table, "_native_order", None) or []
        snap: list[Any] = table._native_msnap if not force else [None] * len(ents)  # type: ignore[attr-defined]
        cells = None
        for j, e in enumerate(ents):
            now = (e.meter, _cell_state(e.meter))
            if snap[j] is None or snap[j][0] is not now[0] or snap[j][1] != now[1]:
                if cells is None:
                    cells = self.lib.sw_tbl_meters(self.sw, tm.index)
                _cell_to_c(e.meter, cells[j])
                snap[j] = now
        table._native_msnap = snap  # type: ignore[attr-defined]

    def _action_words(self, table: Any, e: Any, npar: int, groups: list[int]) -> list[int]:
        """An entry's action word and data: direct, a profile member, or a selector group
        (ACT_GROUP, its offset into ``groups``), as ``Table._ref_result`` resolves them."""
        if e.members is None or table.profile is None:
            info = table.actions[e.action]
            return [info.index] + _param_words(info, e.params, npar)
        prof = table.profile
        kind, ident = e.members
        if kind == "member":
            m = prof.member(ident)
            info = table.actions[m.action]
            return [info.index] + _param_words(info, m.params, npar)
        places = prof.group_members(ident)
        if not places:  # BMv2: an empty group runs no action
            return [NO_ACTION] + [0] * npar
        off = len(groups)
        groups.append(len(places))
        for m in places:
            info = table.actions[m.action]
            groups += [info.index] + _param_words(info, m.params, npar)
        return [ACT_GROUP, off] + [0] * (npar - 1)

    def _push_table(self, tm: cgen.TableMeta) -> None:
        table = self.compiled.tables[tm.cp_name]
        if table.needs_priority:
            order = list(table._sorted)
        elif table.is_lpm:
            order = [e for _, d in table._lpm for e in d.values()]
        else:
            order = list(table.entries.values())
        flat: list[int] = []
        groups: list[int] = []
        nk, npar = tm.ncols, tm.nparams
        for e in order:
            words = self._action_words(table, e, npar, groups)
            flat += [words[0], e.handle, e.packets, e.bytes, e.last_hit]
            assert e.match is not None
            for kd, m in zip(tm.keys, e.match):
                full = (1 << kd.width) - 1
                if kd.kind == "exact":
                    pair = (m, full)
                elif kd.kind == "lpm":
                    v, plen = m
                    pair = (v, full ^ ((1 << (kd.width - plen)) - 1))
                else:
                    pair = (m[0], m[1])
                if kd.width > 64:  # one column per limb, most significant first
                    for a, b in zip(reversed(split(pair[0], kd.width)), reversed(split(pair[1], kd.width))):
                        flat += [a, b]
                else:
                    flat += list(pair)
            flat += words[1:]
        dwords = self._action_words(table, table.default_entry, npar, groups)
        default = [dwords[0], 0, 0, 0, 0] + [0] * (2 * nk) + dwords[1:]
        table._native_order = order  # type: ignore[attr-defined]
        table._native_base = [(e.packets, e.bytes) for e in order]  # type: ignore[attr-defined]
        self.lib.sw_tbl_load(self.sw, tm.index, len(order), self.ffi.new("uint64_t[]", flat or [0]),
                             self.ffi.new("uint64_t[]", default), len(groups),
                             self.ffi.new("uint64_t[]", groups or [0]))
        if tm.direct_meter:
            self._push_meters(tm, force=True)

    def _push_pre(self) -> None:
        pre = self.pre
        assert isinstance(pre, NativePRE)
        groups: list[int] = []
        ng = 0
        for grp in pre.groups:
            reps = pre.replicas(grp)
            groups += [grp & 0xFFFFFFFF, len(reps)]
            for rid, port in reps:
                groups += [rid & 0xFFFFFFFF, port & 0xFFFFFFFF]
            ng += 1
        sess: list[int] = []
        for sid, s in dict.items(pre.sessions):
            assert isinstance(s, CloneSession)
            sess += [sid & 0xFFFFFFFF, int(s.port is not None), (s.port or 0) & 0xFFFFFFFF,
                     s.mcast_grp & 0xFFFFFFFF, s.truncate & 0xFFFFFFFF]
        self.lib.sw_pre_load(self.sw, ng, self.ffi.new("uint32_t[]", groups or [0]), len(sess) // 5,
                             self.ffi.new("uint32_t[]", sess or [0]))
        pre.dirty = False

    # ------------------------------------------------------------------ data plane
    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        if not 0 <= port <= MAX_PORT:
            raise PacketError(f"ingress port {port} is outside 0..{MAX_PORT} (bit<9>)")
        return self._run([(port, data)], burst=False)

    def process_burst(self, packets: Sequence[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        for port, _ in packets:
            if not 0 <= port <= MAX_PORT:
                raise PacketError(f"ingress port {port} is outside 0..{MAX_PORT} (bit<9>)")
        return self._run(packets, burst=True)

    def process_many(self, packets: Sequence[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """Packets one after the other (as ``process`` per packet, outputs concatenated) in
        one call into C: the batched entry point of port loops and benchmarks."""
        return self._run(packets, burst=False)

    def _run(self, packets: Sequence[tuple[int, bytes]], burst: bool) -> list[tuple[int, bytes]]:
        ffi, lib = self.ffi, self.lib
        blob = b"".join([d for _, d in packets])
        lens = ffi.new("uint32_t[]", [len(d) for _, d in packets] or [0])
        ports = ffi.new("uint32_t[]", [p for p, _ in packets] or [0])
        with self.lock:
            self._push()
            self._set_clocks()
            n = lib.sw_process(self.sw, len(packets), ffi.from_buffer("uint8_t[]", blob or b"\0"), lens, ports,
                               int(burst))
            out: list[tuple[int, bytes]] = []
            if n:
                recs = ffi.unpack(lib.sw_out_recs(self.sw), 3 * n)
                total = recs[-2] + recs[-1]
                buf = ffi.buffer(lib.sw_out_data(self.sw), total)  # sliced: one copy per output
                out = [(recs[3 * i], buf[recs[3 * i + 1]:recs[3 * i + 1] + recs[3 * i + 2]]) for i in range(n)]
            msgs = self._take_digests()
        self._route_digests(msgs)
        return out

    def _route_digests(self, msgs: list[DigestMessage]) -> None:
        for m in msgs:
            if self.digest_sink is not None:
                self.digest_sink(m)
            else:
                self._digests.append(m)

    def collect_digests(self) -> None:
        """Route digests that batches run by a C port loop (``portio``) left in the C queue
        (``process`` routes its own) to ``digest_sink`` or ``pop_digests``."""
        with self.lock:
            msgs = self._take_digests()
        self._route_digests(msgs)

    def _set_clocks(self) -> None:
        """Injected clocks are read once per call into C; the default ones are read by C."""
        if self._timeout:
            fixed = self.clock is not time.monotonic_ns
            self.lib.sw_set_now(self.sw, int(fixed), int(self.clock()) if fixed else 0)
        for i, m in enumerate(self._meters):
            fixed = m.clock is not _monotonic_us
            self.lib.sw_mtr_now(self.sw, i, int(fixed), float(m.clock()) if fixed else 0.0)

    def _take_digests(self) -> list[DigestMessage]:
        ptr = self.ffi.new("uint64_t **")
        n = self.lib.sw_digests(self.sw, ptr)
        if not n:
            return []
        raw = self.ffi.unpack(ptr[0], n)
        self.lib.sw_digests_clear(self.sw)
        out = []
        i = 0
        while i < n:
            did, recv, cnt = raw[i], raw[i + 1], raw[i + 2]
            name, names, types = self.meta.digests[did]
            vals = []
            j = i + 3
            for w, s in types:  # a wide field is its limbs' words, low first
                limbs = limbs_of(w)
                vals.append(join(raw[j:j + limbs], w, s))
                j += limbs
            out.append(DigestMessage(name, recv, dict(zip(names, vals))))
            i += 3 + cnt
        return out

    def pop_digests(self) -> list[DigestMessage]:
        with self.lock:
            out, self._digests = self._digests, []
            return out

    @property
    def source(self) -> str:
        """The generated C source."""
        return self.c_source


def _param_words(info: Any, params: Sequence[int], npar: int) -> list[int]:
    """An action's data words: a wide parameter as its limbs, low first; zero-padded."""
    out: list[int] = []
    for (_, width), v in zip(info.params, params):
        out += split(v, width) if width > 64 else [v]
    return out + [0] * (npar - len(out))
