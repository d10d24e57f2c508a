"""``NativePipeline``: the ``Pipeline`` API over generated C.

Why a subclass of the Python ``Pipeline``: the control plane (name resolution, key
normalisation, validation, error messages, const entries, P4Runtime glue) stays the
reference Python code, and only the data path and the state it writes move into C:

- tables: the Python ``Table`` objects keep the entries; every change marks the table
  dirty (its result cache is cleared on every change) and the table is pushed to C, in
  match order, before the lock is released or the next packet runs;
- the replication engine: a ``ReplicationEngine`` that marks itself dirty, pushed alike;
- registers and counters live in C (``NativeRegister``/``NativeCounter`` read and write
  the C arrays); direct counters live in the C entries and are copied back into the
  Python ``Entry`` objects whenever the control plane takes the lock;
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
from ..pipeline.externs import Counter, DigestMessage, Register
from ..pipeline.pre import CloneSession, ReplicationEngine
from innet import native_build

from . import cgen
from .crt import CDEF


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
    """A register whose cells are the C array."""

    def __init__(self, name: str, size: int, width: int, signed: bool, ptr: Any, ffi: Any) -> None:
        self.name, self.size, self.width, self.signed = name, size, width, signed
        self._ptr, self._ffi = ptr, ffi

    def _signed(self, v: int) -> int:
        return v - (1 << self.width) if self.signed and v >> (self.width - 1) else v

    @property
    def cells(self) -> list[int]:  # type: ignore[override]
        return [self._signed(v) for v in self._ffi.unpack(self._ptr, self.size)]

    def read(self, index: int) -> int:
        self._check(index)
        return self._signed(int(self._ptr[index]))

    def write(self, index: int, value: int) -> None:
        self._check(index)
        self._ptr[index] = value & ((1 << self.width) - 1)

    def read_all(self) -> list[int]:
        return self.cells

    def reset(self) -> None:
        self._ffi.memmove(self._ptr, bytes(8 * self.size), 8 * self.size)


class NativeCounter(Counter):
    """An indexed counter whose cells are the C arrays."""

    def __init__(self, name: str, size: int, kind: str, packets: Any, nbytes: Any, ffi: Any) -> None:
        self.name, self.size, self.kind = name, size, kind
        self._p, self._b, self._ffi = packets, nbytes, ffi

    @property
    def packets(self) -> list[int]:  # type: ignore[override]
        return list(self._ffi.unpack(self._p, self.size))

    @property
    def bytes(self) -> list[int]:  # type: ignore[override]
        return list(self._ffi.unpack(self._b, self.size))

    def count(self, index: int, nbytes: int) -> None:
        if 0 <= index < self.size:
            self._p[index] += 1
            self._b[index] += nbytes

    def read(self, index: int) -> tuple[int, int]:
        if not 0 <= index < self.size:
            raise ControlPlaneError(f"counter '{self.name}': index {index} out of range (size {self.size})")
        return int(self._p[index]), int(self._b[index])

    def write(self, index: int, packets: int, nbytes: int) -> None:
        self.read(index)
        self._p[index], self._b[index] = packets, nbytes

    def reset(self) -> None:
        self._ffi.memmove(self._p, bytes(8 * self.size), 8 * self.size)
        self._ffi.memmove(self._b, bytes(8 * self.size), 8 * self.size)


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


class NativePipeline(Pipeline):
    """A v1model program executed by generated C (same public API as ``Pipeline``).

    Raises ``NativeUnsupported`` (file:line:col and the construct) for a program the
    native executor does not run, ``native_build.NativeBuildError`` without a working compiler."""

    executor = "native"

    def __init__(self, program: ir.Program, *, seed: int | None = None,
                 digest_sink: Callable[[DigestMessage], None] | None = None,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        source, meta = cgen.generate(program)
        files = program.source_files
        stem = "".join(ch if ch.isalnum() else "_" for ch in (files[0].rsplit("/", 1)[-1].rsplit(".", 1)[0]
                                                              if files else "program"))
        self.c_source = source
        loaded = native_build.load_library(f"innet_sw_{stem}", source, CDEF)
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
        regs = {}
        for i, (name, size, width, signed) in enumerate(meta.registers):
            regs[name] = NativeRegister(name, size, width, signed, lib.sw_reg(self.sw, i), ffi)
        self.compiled.registers.clear()
        self.compiled.registers.update(regs)
        kinds = {n: c.kind for n, c in self.compiled.counters.items()}
        cnts = {}
        for i, (name, size) in enumerate(meta.counters):
            cnts[name] = NativeCounter(name, size, kinds.get(name, "packets"), lib.sw_cnt(self.sw, i, 0),
                                       lib.sw_cnt(self.sw, i, 1), ffi)
        self.compiled.counters.clear()
        self.compiled.counters.update(cnts)
        self._dirty_tables.update(meta.tables)
        with self.lock:
            pass

    # ------------------------------------------------------------------ state sync
    def _pull(self) -> None:
        """Direct counters: what the data path counted since the last push is added to the
        Python entries (so a control-plane write made meanwhile is kept)."""
        for name, tm in self._tmeta.items():
            if not tm.direct_counter:
                continue
            table = self.compiled.tables[name]
            ents = getattr(table, "_native_order", None)
            if not ents:
                continue
            pushed = table._native_pushed  # type: ignore[attr-defined]
            stride = 4 + 2 * len(tm.keys) + tm.nparams
            raw = self.ffi.unpack(self.lib.sw_tbl_entries(self.sw, tm.index), stride * len(ents))
            for j, e in enumerate(ents):
                e.packets += raw[j * stride + 2] - pushed[j][0]
                e.bytes += raw[j * stride + 3] - pushed[j][1]

    def _push(self) -> None:
        dirty = self._dirty_tables | {n for n, tm in self._tmeta.items() if tm.direct_counter}
        for name in dirty:
            tm = self._tmeta.get(name)
            if tm is not None:
                self._push_table(tm)
        self._dirty_tables.clear()
        if isinstance(self.pre, NativePRE) and self.pre.dirty:
            self._push_pre()

    def _push_table(self, tm: cgen.TableMeta) -> None:
        table = self.compiled.tables[tm.cp_name]
        if table.needs_priority:
            order = list(table._sorted)
        elif table.is_lpm:
            order = [e for _, d in table._lpm for e in d.values()]
        else:
            order = list(table.entries.values())
        flat: list[int] = []
        nk, npar = len(tm.keys), tm.nparams
        for e in order:
            info = table.actions[e.action]
            flat += [info.index, e.handle, e.packets, e.bytes]
            assert e.match is not None
            for kd, m in zip(tm.keys, e.match):
                full = (1 << kd.width) - 1
                if kd.kind == "exact":
                    flat += [m, full]
                elif kd.kind == "lpm":
                    v, plen = m
                    flat += [v, full ^ ((1 << (kd.width - plen)) - 1)]
                else:
                    flat += [m[0], m[1]]
            flat += list(e.params) + [0] * (npar - len(e.params))
        d = table.default_entry
        dinfo = table.actions[d.action]
        default = [dinfo.index, 0, 0, 0] + [0] * (2 * nk) + list(d.params) + [0] * (npar - len(d.params))
        table._native_order = order  # type: ignore[attr-defined]
        table._native_pushed = [(e.packets, e.bytes) for e in order]  # type: ignore[attr-defined]
        self.lib.sw_tbl_load(self.sw, tm.index, len(order), self.ffi.new("uint64_t[]", flat or [0]),
                             self.ffi.new("uint64_t[]", default))

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
        blob = b"".join(bytes(d) for _, d in packets)
        lens = ffi.new("uint32_t[]", [len(d) for _, d in packets] or [0])
        ports = ffi.new("uint32_t[]", [p for p, _ in packets] or [0])
        with self.lock:
            self._push()
            n = lib.sw_process(self.sw, len(packets), ffi.from_buffer("uint8_t[]", blob or b"\0"), lens, ports,
                               int(burst))
            out: list[tuple[int, bytes]] = []
            if n:
                recs = ffi.unpack(lib.sw_out_recs(self.sw), 3 * n)
                total = recs[-2] + recs[-1]
                buf = ffi.buffer(lib.sw_out_data(self.sw), total)[:]
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
            for v, (w, s) in zip(raw[i + 3:i + 3 + cnt], types):
                vals.append(v - (1 << w) if s and v >> (w - 1) else v)
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
