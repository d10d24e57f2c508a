"""Differential test: the native executor against the python reference executor.

For p4/innet.p4 and every p4/examples program: the same control-plane set-up (the
program's STF file), then a seeded stream of packets (the STF packets mutated: flipped
bytes, truncations, extra bytes, other ingress ports) mixed with control-plane operations
(register writes, deletes and re-inserts of entries), fed to both executors. Outputs must
be equal packet for packet, and every register and counter byte for byte. A failure
prints a minimal reproducer (the operations that still show the difference)."""

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
            ops.append(("reg", rng.random(), rng.getrandbits(32)))
        elif r < 0.08:
            ops.append(("toggle", rng.random()))
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


def _apply(pl: Pipeline, op: Op, removed: dict[tuple[str, int], Any]) -> Any:
    kind = op[0]
    if kind == "pkt":
        return pl.process(op[1], op[2])
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
            t.insert(e[0], e[1], e[2], e[3])
        else:
            e = t.list_entries()[0]
            specs = _specs(t, e)
            t.delete(specs, e.priority)
            removed[(name, e.handle)] = (specs, e.action, e.params, e.priority)
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


def _state(pl: Pipeline) -> dict[str, Any]:
    st: dict[str, Any] = {f"register {n}": r.read_all() for n, r in pl.registers.items()}
    st.update({f"counter {n}": (c.packets, c.bytes) for n, c in pl.counters.items()})
    return st


def _first_difference(program: Any, stf: Path, ops: list[Op]) -> str | None:
    from innet.switch.native.pipeline import NativePipeline

    pls = [Pipeline(program, seed=1), NativePipeline(program, seed=1)]
    test = read_stf(stf)
    for pl in pls:
        for _, cmd, args in test.control:
            apply_control(pl, cmd, args)
    removed: list[dict[tuple[str, int], Any]] = [{}, {}]
    for i, op in enumerate(ops):
        got = [_apply(pl, op, rm) for pl, rm in zip(pls, removed)]
        if got[0] != got[1]:
            return f"step {i}: {op[0]} outputs differ: python {got[0]!r} native {got[1]!r}"
        if op[0] != "pkt" or i % 25 == 0 or i == len(ops) - 1:
            a, b = _state(pls[0]), _state(pls[1])
            for k in a:
                if a[k] != b.get(k):
                    diff = [j for j, (x, y) in enumerate(zip(a[k], b[k])) if x != y][:5]
                    return f"step {i}: {k} differs (first indexes {diff})"
    return None


def _minimise(program: Any, stf: Path, ops: list[Op]) -> list[Op]:
    """Drop operations (halves, then single ones) while the difference stays."""
    chunk = len(ops) // 2
    while chunk >= 1:
        i = 0
        while i < len(ops):
            trial = ops[:i] + ops[i + chunk:]
            if trial and _first_difference(program, stf, trial) is not None:
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


@pytest.mark.slow
@pytest.mark.parametrize("p4", PROGRAMS, ids=lambda p: p.stem)
def test_native_matches_python(p4: Path) -> None:
    stf = p4.with_suffix(".stf")
    program = compile_file(str(p4))
    seed = sum(p4.name.encode())
    ops = _ops(stf, seed)
    diff = _first_difference(program, stf, ops)
    if diff is not None:
        small = _minimise(program, stf, ops)
        pytest.fail(f"{p4.name} (seed {seed}): {_first_difference(program, stf, small) or diff}\n"
                    f"minimal reproducer after the STF's control commands ({stf.name}):\n{_reproducer(small)}")
