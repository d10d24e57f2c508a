"""Loop rerolling of generated C (innet.switch.native.reroll): what becomes a loop, what
stays straight-line, and that a loop computes exactly what the statements it replaces do."""

from __future__ import annotations

import itertools
import random

import pytest

from innet.native_build import NativeBuildError, compiler_path, load_library
from innet.switch.native import reroll


def _names() -> object:
    counter = itertools.count(1000)
    return lambda: f"_r{next(counter)}"


def _add_row(i: int) -> list[str]:
    """One element of innet's INNET_ADD_PARTIAL as cgen writes it (register column i)."""
    return [f"    u64 _t{10 + 2 * i} = S[3];",
            f"    S[4] = (_t{10 + 2 * i} < 8 ? B[_t{10 + 2 * i} * 16 + {i}] : 0);",
            f"    S[{40 + i}] = ((S[{40 + i}] + S[4]) & 0xffffffffULL);"]


def test_progressions_become_one_loop() -> None:
    stmts = [_add_row(i) for i in range(16)]
    out = "\n".join(reroll.compress(stmts, _names()))
    assert out.count("for (int") == 1 and "< 16;" in out
    assert "S[(40 + _r1000 * 1)]" in out and "(0 + _r1000 * 1)" in out
    # S[3] is only read: loaded once before the loop; S[4] is written: stored after it
    assert "u64 _r1001 = S[3];" in out and "S[4] = _r1002;" in out


def test_statements_that_do_not_progress_stay() -> None:
    stmts = [[f"    S[{x}] = 1;"] for x in (5, 6, 8, 9, 10)]  # 6 -> 8 breaks the progression
    assert reroll.compress(stmts, _names()) == [ln for s in stmts for ln in s]
    same = [["    S[5] = 1;"]] * 6  # nothing varies: no loop
    assert reroll.compress(same, _names()) == [ln for s in same for ln in s]


@pytest.mark.parametrize("text", ["    if (S[{i}]) break;", "    st{i}: ;", "    switch (S[{i}]) {{ default: ; }}"])
def test_control_transfer_is_not_rerolled(text: str) -> None:
    stmts = [[text.format(i=i)] for i in range(8)]
    assert "for (int" not in "\n".join(reroll.compress(stmts, _names()))


def test_promotion_is_skipped_when_a_call_sees_S() -> None:
    stmts = [[f"    S[{10 + i}] = S[2] + 1;", "    A1(c, S, NULL);"] for i in range(6)]
    out = "\n".join(reroll.compress(stmts, _names()))
    assert "for (int" in out and "S[2] + 1" in out and "= S[2];" not in out


def test_constant_slot_inside_a_progression_is_not_promoted() -> None:
    stmts = [[f"    S[{10 + i}] = S[12] + {i};"] for i in range(6)]  # writes S[12] at i == 2
    out = "\n".join(reroll.compress(stmts, _names()))
    assert "for (int" in out and "= S[12];" not in out


def _kernel(lines: list[str]) -> str:
    body = "\n".join(lines)
    return ("#include <stdint.h>\ntypedef uint64_t u64;\n"
            "void run(u64 *S, u64 *B) {\n" + body + "\n}\n")


def test_loop_computes_what_the_statements_do() -> None:
    """Compile the straight-line statements and their rerolled form; same results."""
    if compiler_path() is None:
        pytest.skip("needs a C compiler (cc/gcc)")
    rng = random.Random(7)
    stmts = []
    for i in range(24):
        stmts.append(_add_row(i))
        stmts.append([f"    S[5] = (S[5] + S[{40 + i}] * {i + 3}ULL) & 0xffffULL;"])  # a running sum
    rolled = reroll.compress(stmts, _names())
    assert "for (int" in "\n".join(rolled)
    cdef = "void run(uint64_t *S, uint64_t *B);"
    try:
        libs = [load_library(f"reroll_{k}", _kernel(lines), cdef)
                for k, lines in (("flat", [ln for s in stmts for ln in s]), ("loop", rolled))]
    except NativeBuildError as error:
        pytest.fail(f"generated C does not build: {error.details[:400]}")
    for _ in range(5):
        s0 = [rng.getrandbits(40) for _ in range(80)]
        s0[3] = rng.randrange(10)  # sometimes out of the 8 rows: the read yields 0
        b0 = [rng.getrandbits(32) for _ in range(8 * 16 + 16)]
        results = []
        for lib in libs:
            S, B = lib.ffi.new("uint64_t[]", s0), lib.ffi.new("uint64_t[]", b0)
            lib.lib.run(S, B)
            results.append((list(S), list(B)))
        assert results[0] == results[1]
