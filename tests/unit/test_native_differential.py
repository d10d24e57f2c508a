"""Differential test: the native executor against the python reference executor.

For p4/innet.p4, every p4/examples program and the programs of the constructs the
native executor learnt last (action profiles and selectors, meters and direct meters,
idle-timeout tables, varbit, sub-parsers, values wider than 64 bits): the same
control-plane set-up (the program's
STF file), then a seeded stream of packets (the STF packets mutated: flipped bytes,
truncations, extra bytes, other ingress ports) mixed with control-plane operations
(register writes, deletes and re-inserts of entries, meter rates, action-selector group
changes, clock ticks), fed to both executors. Both run on one injected clock (the
pipeline's and every meter's), advanced only between operations. Outputs and digests
must be equal packet for packet, and every register, counter, meter cell, direct
counter, direct meter cell and last-hit stamp equal. A failure prints a minimal
reproducer (the operations that still show the difference).

Every case runs with each register layout of the native executor (``fuse``): ``auto``
(arrays the program indexes together fused), ``all`` (fusion forced on: every register
array with the same element type and size in one block) and ``off`` (one block per
array)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from innet.switch.frontend import compile_file
from innet.native_build import compiler_path
from innet.switch.pipeline import Pipeline
from innet.switch.stf import apply_control, read_stf

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = [REPO / "p4" / "innet.p4"] + sorted((REPO / "p4" / "examples").glob("*.p4"))
CONSTRUCTS = [
    (REPO / "tests/conformance/tables/action_selector.p4", REPO / "tests/conformance/tables/action_selector.innet.stf"),
    (REPO / "tests/conformance/tables/action_profile.p4", REPO / "tests/conformance/tables/action_profile.innet.stf"),
    (REPO / "tests/unit/native_diff/meters.p4", REPO / "tests/unit/native_diff/meters.stf"),
    (REPO / "tests/unit/native_diff/varbit.p4", REPO / "tests/unit/native_diff/varbit.stf"),
    (REPO / "tests/conformance/parser/varbit_extract.p4", REPO / "tests/conformance/parser/varbit_extract.stf"),
    (REPO / "tests/conformance/parser/subparser.p4", REPO / "tests/conformance/parser/subparser.stf"),
    (REPO / "tests/unit/native_diff/wide.p4", REPO / "tests/unit/native_diff/wide.innet.stf"),
]
CASES = [(p, p.with_suffix(".stf")) for p in PROGRAMS] + CONSTRUCTS
STEPS = 400

pytestmark = pytest.mark.skipif(compiler_path() is None, reason="native executor needs a C compiler (cc/gcc)")

Op = tuple[Any, ...]


def _ops(stf: Path, seed: int) -> list[Op]:
    test = read_stf(stf)
    rng = random.Random(seed)
    base = [(port, data) for _, port, data in test.packets] or [(0, bytes(64))]
    ports = sorted({p for p, _ in base} | {0, 1, 2, 3})
    ops: list[Op] = []
    for _ in range(STEPS):
        r = rng.random()
        if r < 0.05:
            ops.append(("reg", rng.random(), rng.getrandbits(256)))  # truncated to the register's width
        elif r < 0.08:
            ops.append(("toggle", rng.random()))
        elif r < 0.11:
            cburst = rng.choice((1, 2, 5, 150))
            ops.append(("rates", rng.random(), rng.choice((0.0005, 0.001, 0.01)), cburst,
                        rng.choice((0.002, 0.02)), cburst + rng.choice((1, 3, 300))))
        elif r < 0.14:
            ops.append(("group", rng.random(), rng.random()))
        elif r < 0.30:
            ops.append(("tick", rng.choice((1, 50, 1000, 20000))))
        else:
            port, data = rng.choice(base)
            b = bytearray(data)
            for _ in range(rng.choice((0, 0, 1, 2, 3))):
                if b:
                    b[rng.randrange(len(b))] = rng.getrandbits(8)
            if rng.random() < 0.1 and b:
                del b[rng.randrange(len(b)):]
            if rng.random() < 0.1:
                b += bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 16)))
            if rng.random() < 0.1:
                port = rng.choice(ports)
            ops.append(("pkt", port, bytes(b)))
    return ops


def _apply(pl: Pipeline, op: Op, removed: dict[tuple[str, int], Any], clk: list[int]) -> Any:
    kind = op[0]
    if kind == "pkt":
        return pl.process(op[1], op[2]), [(d.name, d.receiver, d.fields) for d in pl.pop_digests()]
    if kind == "tick":
        clk[0] += op[1]
        return None
    if kind == "rates":
        return _rates(pl, op)
    if kind == "group":
        return _group(pl, op)
    if kind == "reg":
        regs = sorted(pl.registers)
        if regs:
            r = pl.registers[regs[int(op[1] * len(regs))]]
            pl.register_write(r.name, int(op[1] * 7919) % r.size, op[2])
        return None
    tables = [t for t in sorted(pl.tables) if not pl.tables[t].const and (pl.tables[t].entries or
                                                                            any(k[0] == t for k in removed))]
    if not tables:
        return None
    name = tables[int(op[1] * len(tables))]
    t = pl.tables[name]
    gone = [k for k in removed if k[0] == name]
    with pl.atomic():
        if gone:
            e = removed.pop(gone[0])
            if e[4] is not None:
                kw = {e[4][0]: e[4][1]}
                t.insert_indirect(e[0], priority=e[3], **kw)
            else:
                t.insert(e[0], e[1], e[2], e[3])
        else:
            e = t.list_entries()[0]
            specs = _specs(t, e)
            ref = e.members
            t.delete(specs, e.priority)
            removed[(name, e.handle)] = (specs, e.action, e.params, e.priority, ref)
    return None


def _rates(pl: Pipeline, op: Op) -> None:
    """Configure an indexed meter cell or a direct meter entry (both executors alike)."""
    from innet.switch.pipeline.externs import MeterCell

    _, pick, cir, cburst, pir, pburst = op
    with pl.atomic():
        cells = [(n, i) for n in sorted(pl.meters) for i in range(pl.meters[n].size)]
        ents = [(n, e) for n in sorted(pl.compiled.direct_meters)
                for e in pl.compiled.direct_meters[n][1].list_entries()]
        targets: list[Any] = cells + ents
        if not targets:
            return None
        n, x = targets[int(pick * len(targets))]
        if isinstance(x, int):
            pl.meter_set_rates(n, x, cir, cburst, pir, pburst)
        else:
            x.meter = MeterCell(cir, cburst, pir, pburst, True, float(cburst), float(pburst), None)
    return None


def _group(pl: Pipeline, op: Op) -> None:
    """Add a member to, or remove one from, an action-selector group."""
    with pl.atomic():
        profs = [pl.compiled.profiles[n] for n in sorted(pl.compiled.profiles)]
        profs = [p for p in profs if p.with_selector and p.groups and p.members]
        if not profs:
            return None
        prof = profs[int(op[1] * len(profs))]
        gid = sorted(prof.groups)[int(op[2] * len(prof.groups))]
        mid = sorted(prof.members)[int(op[2] * 7919) % len(prof.members)]
        if mid in prof.groups[gid].weights:
            prof.remove_member_from_group(gid, mid)
        else:
            prof.add_member_to_group(gid, mid, 1 + int(op[2] * 3))
    return None


def _specs(t: Any, e: Any) -> list[Any]:
    from innet.switch.pipeline import KeySpec

    out = []
    for kd, m in zip(t.keys, e.match):
        if kd.kind == "exact":
            out.append(KeySpec(m))
        elif kd.kind == "lpm":
            out.append(KeySpec(m[0], prefix_len=m[1]))
        elif kd.kind == "range":
            out.append(KeySpec(m[0], hi=m[1]))
        else:
            out.append(KeySpec(m[0], mask=m[1]))
    return out


def _cell(c: Any) -> Any:
    return None if c is None else (c.cir, c.cburst, c.pir, c.pburst, c.configured, c.tc, c.tp, c.last_us)


def _state(pl: Pipeline, register: str | None = None) -> dict[str, Any]:
    """Every register, counter, meter and table entry; ``register``: that register alone."""
    with pl.lock:
        if register is not None:
            return {f"register {register}": pl.registers[register].read_all()}
        st: dict[str, Any] = {f"register {n}": r.read_all() for n, r in pl.registers.items()}
        st.update({f"counter {n}": (c.packets, c.bytes) for n, c in pl.counters.items()})
        st.update({f"meter {n}": [_cell(c) for c in m.cells] for n, m in pl.meters.items()})
        for n, t in pl.tables.items():
            st[f"table {n}"] = [(e.handle, e.packets, e.bytes, e.last_hit, _cell(e.meter)) for e in t.list_entries()]
    return st


def _first_difference(program: Any, stf: Path, ops: list[Op], fuse: str) -> str | None:
    from innet.switch.native.pipeline import NativePipeline

    clks = [[1_000_000], [1_000_000]]  # us, one clock per executor, ticked alike
    pls: list[Pipeline] = [Pipeline(program, seed=1, clock=lambda: clks[0][0] * 1000),
                           NativePipeline(program, seed=1, clock=lambda: clks[1][0] * 1000, fuse=fuse)]
    test = read_stf(stf)
    for pl, clk in zip(pls, clks):
        for m in list(pl.meters.values()) + [m for m, _ in pl.compiled.direct_meters.values()]:
            m.clock = (lambda c: lambda: float(c[0]))(clk)
        for _, cmd, args in test.control:
            apply_control(pl, cmd, args)
    removed: list[dict[tuple[str, int], Any]] = [{}, {}]
    for i, op in enumerate(ops):
        got = [_apply(pl, op, rm, clk) for pl, rm, clk in zip(pls, removed, clks)]
        if got[0] != got[1]:
            return f"step {i}: {op[0]} outputs differ: python {got[0]!r} native {got[1]!r}"
        # The whole state after every control-plane op, every 25th op and the last; a tick only
        # moves the clocks (neither executor is called), and after a register write the written
        # register is compared at once and the rest at the next whole comparison (agg2048's
        # 2048 x 1024 cells after each of ~200 writes took most of the test's 20 s).
        whole = op[0] not in ("pkt", "tick", "reg") or i % 25 == 0 or i == len(ops) - 1
        written = sorted(pls[0].registers) if op[0] == "reg" and not whole else []
        if whole or written:
            only = written[int(op[1] * len(written))] if written else None
            a, b = _state(pls[0], only), _state(pls[1], only)
            for k in a:
                if a[k] != b.get(k):
                    diff = [j for j, (x, y) in enumerate(zip(a[k], b[k])) if x != y][:5]
                    return f"step {i}: {k} differs (first indexes {diff}): python {a[k]!r:.300} native {b.get(k)!r:.300}"
    return None


def _minimise(program: Any, stf: Path, ops: list[Op], fuse: str) -> list[Op]:
    """Drop operations (halves, then single ones) while the difference stays."""
    chunk = len(ops) // 2
    while chunk >= 1:
        i = 0
        while i < len(ops):
            trial = ops[:i] + ops[i + chunk:]
            if trial and _first_difference(program, stf, trial, fuse) is not None:
                ops = trial
            else:
                i += chunk
        chunk //= 2
    return ops


def _reproducer(ops: list[Op]) -> str:
    lines = []
    for op in ops:
        if op[0] == "pkt":
            lines.append(f"packet {op[1]} {op[2].hex()}")
        else:
            lines.append(f"# control-plane op {op!r}")
    return "\n".join(lines)


def _same_code_as_all(program: Any) -> bool:
    """``auto`` found the same register groups as ``all`` and generates the same C, so running
    the differential again would execute the same library (agg2048: 20 s)."""
    from innet.switch.native import cgen
    from innet.switch.native.fuse import register_groups

    if register_groups(program, "auto") != register_groups(program, "all"):
        return False
    return cgen.generate(program, "auto", True)[0] == cgen.generate(program, "all", True)[0]


@pytest.mark.slow
@pytest.mark.parametrize("fuse", ["auto", "all", "off"])
@pytest.mark.parametrize("p4,stf", CASES, ids=[p.stem for p, _ in CASES])
def test_native_matches_python(p4: Path, stf: Path, fuse: str) -> None:
    program = compile_file(str(p4))
    if fuse == "auto" and _same_code_as_all(program):
        return  # byte-identical C to the "all" case, which runs the differential
    seed = sum(p4.name.encode())
    ops = _ops(stf, seed)
    diff = _first_difference(program, stf, ops, fuse)
    if diff is not None:
        small = _minimise(program, stf, ops, fuse)
        pytest.fail(f"{p4.name} (seed {seed}, fuse {fuse}): {_first_difference(program, stf, small, fuse) or diff}\n"
                    f"minimal reproducer after the STF's control commands ({stf.name}):\n{_reproducer(small)}")


@pytest.mark.parametrize("victim", ["same", "neighbour"])
def test_the_differential_finds_a_register_write_that_lands_wrong(monkeypatch: pytest.MonkeyPatch,
                                                                   victim: str) -> None:
    """A native register write that lands in the wrong cell ("same": the next cell of the
    register written; "neighbour": the same cell of the next register, the fused layout's
    adjacent column) is reported, though after a write only the written register is compared
    at once."""
    from innet.switch.native.pipeline import NativePipeline, NativeRegister

    real_write = NativeRegister.write
    owner: dict[int, NativePipeline] = {}

    def wrong_write(self: NativeRegister, index: int, value: int) -> None:
        if victim == "same":
            return real_write(self, (index + 1) % self.size, value)
        pl = owner[0]
        names = sorted(pl.registers)
        other = pl.registers[names[(names.index(self.name) + 1) % len(names)]]
        return real_write(other, index % other.size, value)  # type: ignore[arg-type]

    real_init = NativePipeline.__init__

    def remember(self: NativePipeline, *a: Any, **kw: Any) -> None:
        real_init(self, *a, **kw)
        owner[0] = self

    monkeypatch.setattr(NativePipeline, "__init__", remember)
    monkeypatch.setattr(NativeRegister, "write", wrong_write)
    p4, stf = next((p, s) for p, s in CASES if p.stem == "agg64")
    program = compile_file(str(p4))
    ops = [op for op in _ops(stf, 3) if op[0] in ("reg", "pkt")]
    diff = _first_difference(program, stf, ops, "all")
    assert diff is not None and "register" in diff, diff
