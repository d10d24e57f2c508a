"""Programs with the faults of p4c's error corpus, through ``innet-p4c``'s whole compile.

p4c's ``testdata/p4_16_errors`` is not in the repository, so its kinds of fault are planted
into the programs that are (p4/ and tests/conformance/): huge literals, widths and shift
counts, negative or reversed slices, a block that instantiates itself, a duplicated
declaration, entry or statement, a removed ``main``, plus the token/line/byte mutations of
``test_fuzz_frontend``.  Each mutant is compiled by ``device_config.build`` (front-end, the
executor's check, P4Info: what ``innet-p4c`` runs); the only acceptable outcomes are
success or the front-end's own error type (``FrontendError``, or ``P4InfoError`` for the
P4Info step), never another exception, a traceback or a hang.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest
from fuzzlib import Hang, count, fuzz_settings, known_bug, watchdog
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_frontend import TARGETS, Target, _fail, mutate

from innet.switch.device_config import build
from innet.switch.frontend.errors import FrontendError
from innet.switch.p4info import P4InfoError

COMPILE_DEADLINE_S = 30.0
NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
WIDTH = re.compile(r"\b(bit|int|varbit)<\s*(\d+)\s*>")
SLICE = re.compile(r"\[\s*(\d+)\s*:\s*(\d+)\s*\]")
CONTROL = re.compile(r"^control\s+(\w+)\s*\(([^)]*)\)\s*\{", re.M)
HUGE = ("1985245330 << 903012108", "1" * 5000, "0x" + "F" * 700, "2147483648w1", "8w" + "9" * 40, "-1",
        "(1 << 2047) * 4", "4294967296 << 4096")
WIDTHS = ("0", "2147483648", "12301923123132", "65537", "-1")
SLICES = ("[1:-1]", "[-1:0]", "[0:1]", "[70000:0]", "[2147483647:0]", "[7:7]")


def _plant(rng: random.Random, src: str) -> str:
    """One fault of a kind p4c's error corpus holds, at a random place."""
    kind = rng.randrange(7)
    if kind == 0 and NUMBER.search(src):
        spots = list(NUMBER.finditer(src))
        m = rng.choice(spots)
        return src[:m.start()] + rng.choice(HUGE) + src[m.end():]
    if kind == 1 and WIDTH.search(src):
        m = rng.choice(list(WIDTH.finditer(src)))
        return src[:m.start(2)] + rng.choice(WIDTHS) + src[m.end(2):]
    if kind == 2 and SLICE.search(src):
        m = rng.choice(list(SLICE.finditer(src)))
        return src[:m.start()] + rng.choice(SLICES) + src[m.end():]
    if kind == 3 and CONTROL.search(src):
        m = rng.choice(list(CONTROL.finditer(src)))
        if m.group(2).strip():  # a control with parameters: apply itself from its body
            return src[:m.end()] + f"\n    {m.group(1)}() self_inst;\n" + src[m.end():]
        return src[:m.end()] + f"\n    {m.group(1)}() self_inst;\n    apply {{ self_inst.apply(); }}\n" + src[m.end():]
    lines = src.split("\n")
    if kind == 4:  # a declaration, entry or statement twice
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "\n".join(lines)
    if kind == 5:  # no main: every declaration must still be checked
        return "\n".join(line for line in lines if not re.search(r"\)\s*main\s*;", line))
    return mutate(rng, src.encode("utf-8")).decode("utf-8", "replace")


def check(target: Target, workdir: Path, original: bytes, mutant: bytes, seed: int) -> None:
    (workdir / target.mutate).write_bytes(mutant)
    count("p4c_error_mutants")
    try:
        with watchdog(COMPILE_DEADLINE_S, f"innet-p4c on {target.name}"):
            build(workdir / target.main, (workdir,), dict(target.defines))
        count("p4c_error_mutants_compiled")
    except (FrontendError, P4InfoError):
        count("p4c_error_mutants_rejected")
    except (Exception, RecursionError, MemoryError, Hang) as error:
        if known_bug(type(error).__name__, str(error)) is None:
            _fail(target, original, mutant, seed, "innet-p4c compile", error)


@pytest.mark.parametrize("group", sorted(TARGETS))
def test_planted_corpus_faults_never_escape(group: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every mutant compiles or is refused with the front-end's own error: no other exception."""
    monkeypatch.setenv("INNET_START_CACHE", "off")  # mutants must not fill the start cache
    targets = TARGETS[group]
    roots: dict[Path, Path] = {}
    for t in targets:
        if t.root not in roots:
            roots[t.root] = tmp_path / f"root{len(roots)}"
            shutil.copytree(t.root, roots[t.root])

    @fuzz_settings(60)
    @given(st.sampled_from(targets), st.integers(0, 2**64 - 1))
    def run(target: Target, seed: int) -> None:
        workdir = roots[target.root]
        original = (target.root / target.mutate).read_bytes()
        rng = random.Random(seed)
        src = original.decode("utf-8")
        for _ in range(rng.choice((1, 1, 2))):
            src = _plant(rng, src)
        try:
            check(target, workdir, original, src.encode("utf-8", "replace"), seed)
        finally:
            (workdir / target.mutate).write_bytes(original)

    run()
