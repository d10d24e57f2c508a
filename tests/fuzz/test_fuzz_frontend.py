"""Mutated P4 programs into the front-end (p4/ and tests/conformance/ programs).

The only acceptable outcomes are success or the front-end's own located error
(``P4Error``: ``file:line:col: error: ...``). A mutant that compiles must also give a
P4Info, load into the executor (or raise the executor's located ``UnsupportedError``) and
run one packet without an exception or a hang: that is where generated-code bugs show up.
Mutations work on tokens, lines and bytes of one file of the program; the mutant is
compiled from a file (as ``innet-p4c`` reads it), next to the original's includes.
"""

from __future__ import annotations

import difflib
import hashlib
import random
import re
import shutil
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest
from fuzzlib import REPO, Hang, count, fuzz_settings, known_bug, save_reproducer, watchdog
from hypothesis import given
from hypothesis import strategies as st

from innet.switch.frontend import compile_file, ir
from innet.switch.frontend.errors import P4Error
from innet.switch.p4info import build_p4info
from innet.switch.pipeline import Pipeline
from innet.switch.pipeline.errors import UnsupportedError as PipelineUnsupported
from innet.switch.stf import parse_stf

COMPILE_DEADLINE_S = 30.0
PACKET_DEADLINE_S = 5.0
LOCATED = re.compile(r"^[^\n]*:\d+:\d+: ")

TOKEN = re.compile(r"\s+|//[^\n]*|/\*.*?\*/|0[xX][0-9a-fA-F_]+|\d+[wsWS]\d+|\d+|[A-Za-z_]\w*|"
                   r"&&&|\.\.|<<|>>|\|\+\||\|-\||==|!=|<=|>=|&&|\|\||\+\+|.", re.S)
DICTIONARY = (
    "header", "struct", "header_union", "enum", "typedef", "type", "const", "action", "table", "control",
    "parser", "state", "transition", "select", "apply", "if", "else", "switch", "return", "exit", "default",
    "key", "actions", "size", "entries", "bit<0>", "bit<1>", "bit<65>", "int<1>", "varbit<8>", "bool",
    "error", "packet_in", "packet_out", "extern", "in", "out", "inout", "tuple<>", "_", "{", "}", "(", ")",
    "<", ">", "[", "]", ";", ",", ".", "=", "-", "~", "!", "#", "@name(\"x\")", "true", "false",
    "0", "1", "-1", "0w0", "1w2", "8w256", "8s-129", "32w0xFFFFFFFF", "0xFFFFFFFFFFFFFFFFFFFFFFFF",
    "65536", "4294967296", "1 << 70", "(bit<3>)1000", "accept", "reject", "start", "isValid()",
    "setValid()", "extract", "emit", "lookahead<bit<8>>()", "hdr", "meta", "standard_metadata",
    "mark_to_drop", "NoAction", "main", "V1Switch", "\"", "'", "\\", "/*", "*/", "//",
)


@dataclass(frozen=True)
class Target:
    """One program: the file mutated, the file compiled, include dirs, defines, a packet."""

    name: str
    root: Path
    """Copied to a temp dir; paths below are relative to it."""
    mutate: str
    main: str
    defines: tuple[tuple[str, str], ...] = ()


def _targets() -> dict[str, list[Target]]:
    p4 = REPO / "p4"
    innet_parts = ["innet.p4"] + [f"innet/{f.name}" for f in sorted((p4 / "innet").glob("*.p4"))]
    groups: dict[str, list[Target]] = {
        "p4": [Target(f"innet:{part}", p4, part, "innet.p4", (("INNET_K", "4"), ("INNET_SLOTS", "16"),
                                                              ("INNET_PARAM_CHUNKS", "16")))
               for part in innet_parts]
        + [Target(f.stem, p4 / "examples", f.name, f.name) for f in sorted((p4 / "examples").glob("*.p4"))],
        "conformance": [Target(str(f.relative_to(REPO / "tests" / "conformance")), f.parent, f.name, f.name)
                        for f in sorted((REPO / "tests" / "conformance").rglob("*.p4"))],
    }
    return groups


TARGETS = _targets()


def _packet(target: Target, workdir: Path) -> tuple[int, bytes]:
    stf = (workdir / target.main).with_suffix(".stf")
    if stf.is_file():
        try:
            packets = parse_stf(stf.read_text()).packets
        except Exception:
            packets = []
        if packets:
            return packets[0][1], packets[0][2]
    return 1, bytes(range(64)) * 2


NUMBERS = ("0", "1", "2", "7", "8", "9", "16", "31", "32", "33", "63", "64", "65", "255", "256", "511",
           "4096", "0xFFFFFFFF", "8w255", "16w0", "4s-8", "1w1")


def _token_class(tok: str) -> str:
    if tok[:1].isdigit():
        return "number"
    if tok[:1].isalpha() or tok[:1] == "_":
        return "identifier"
    return "punctuation"


def mutate(rng: random.Random, text: bytes) -> bytes:
    """1..4 mutations of tokens (delete, duplicate, swap, replace by a token of the same
    class, a number or a dictionary word), lines (delete, duplicate, swap) or bytes (mostly printable ASCII; rarely
    any byte)."""
    src = text.decode("utf-8")
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        kind = rng.random()
        if kind < 0.6:
            toks = TOKEN.findall(src)
            solid = [i for i, t in enumerate(toks) if not t.isspace()]
            if not solid:
                continue
            i = rng.choice(solid)
            op = rng.randrange(5)
            if op == 0:
                toks[i] = ""
            elif op == 1:
                toks[i] = toks[i] + " " + toks[i]
            elif op == 2:
                j = rng.choice(solid)
                toks[i], toks[j] = toks[j], toks[i]
            elif op == 3:  # same class: identifier for identifier, number for number
                cls = _token_class(toks[i])
                same = [t for t in (toks[k] for k in solid) if _token_class(t) == cls]
                toks[i] = rng.choice(same)
                if cls == "number" and rng.random() < 0.5:
                    toks[i] = rng.choice(NUMBERS)
            else:
                toks[i] = rng.choice(DICTIONARY)
            src = "".join(toks)
        elif kind < 0.85:
            lines = src.split("\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            op = rng.randrange(3)
            if op == 0:
                del lines[i]
            elif op == 1:
                lines.insert(j, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            src = "\n".join(lines)
        else:
            data = bytearray(src.encode("utf-8"))
            if not data:
                continue
            at = rng.randrange(len(data))
            if rng.random() < 0.97:
                data[at] = rng.randrange(0x20, 0x7F)
            else:  # any byte: may make the file invalid UTF-8
                data[at] = rng.randrange(256)
                return bytes(data)
            src = data.decode("utf-8", errors="replace")
    return src.encode("utf-8")


def _has_empty_header(program: ir.Program | None, text: bytes) -> bool:
    """The known empty-header bug's trigger: a header type without fields in the program
    (``header e_t { }``, also when a mutated macro expands to no fields)."""
    if program is not None:
        return any(isinstance(t, ir.HeaderT) and not t.fields for t in program.types.values())
    return re.search(rb"header\s+\w+\s*\{\s*\}", text) is not None


def check_mutant(target: Target, workdir: Path, original: bytes, mutant: bytes, seed: int) -> None:
    path = workdir / target.mutate
    path.write_bytes(mutant)
    count("p4_mutants")
    stage = "compile"
    program = None
    try:
        with watchdog(COMPILE_DEADLINE_S, f"front-end on {target.name}"):
            program = compile_file(workdir / target.main, include_dirs=(workdir,), defines=dict(target.defines))
            stage = "p4info"
            build_p4info(program)
            stage = "load"
            try:
                pipeline = Pipeline(program, seed=0)
            except PipelineUnsupported as error:
                # a program without `main` compiles (documented) and has nothing to locate
                if program.main is not None and not LOCATED.match(str(error)):
                    raise AssertionError(f"executor UnsupportedError without file:line:col: {error}") from None
                count("p4_mutants_unsupported")
                return
        count("p4_mutants_compiled")
        stage = "packet"
        port, data = _packet(target, workdir)
        with watchdog(PACKET_DEADLINE_S, f"one packet through {target.name}"):
            outputs = pipeline.process(port, data)
        assert all(0 <= p < 511 for p, _ in outputs), f"output ports {[p for p, _ in outputs]}"
    except P4Error as error:
        if stage != "compile" or not LOCATED.match(str(error)):
            _fail(target, original, mutant, seed, stage, error)
        count("p4_mutants_rejected")
    except (Exception, Hang) as error:
        name = type(error).__name__
        generated = name in ("SyntaxError", "IndentationError")
        if (generated and not _has_empty_header(program, mutant)) or known_bug(name, str(error)) is None:
            _fail(target, original, mutant, seed, stage, error)


def _fail(target: Target, original: bytes, mutant: bytes, seed: int, stage: str, error: BaseException) -> None:
    digest = hashlib.sha256(mutant).hexdigest()[:12]
    saved = save_reproducer("p4", f"{target.name.replace('/', '_')}-{digest}{Path(target.mutate).suffix}", mutant)
    diff = "".join(difflib.unified_diff(original.decode("utf-8", "replace").splitlines(True),
                                        mutant.decode("utf-8", "replace").splitlines(True),
                                        target.mutate, f"mutant ({saved.name})", n=1))
    raise AssertionError(
        f"{target.name}: {stage} of a mutant raised {type(error).__name__}: {str(error)[:500]}\n"
        f"mutant saved to {saved} (replaces {target.root / target.mutate}; compile "
        f"{target.main}; seed {seed})\n{diff[:3000]}\n{traceback.format_exc()[-3000:]}")


@pytest.mark.parametrize("group", sorted(TARGETS))
def test_mutated_programs(group: str, tmp_path: Path) -> None:
    """Outcome of every mutant: success (then P4Info, load, one packet) or a located P4Error."""
    targets = TARGETS[group]
    roots = {}
    for t in targets:
        if t.root not in roots:
            dest = tmp_path / f"root{len(roots)}"
            shutil.copytree(t.root, dest)
            roots[t.root] = dest

    @fuzz_settings(120)
    @given(st.sampled_from(targets), st.integers(0, 2**64 - 1))
    def check(target: Target, seed: int) -> None:
        workdir = roots[target.root]
        original = (target.root / target.mutate).read_bytes()
        try:
            check_mutant(target, workdir, original, mutate(random.Random(seed), original), seed)
        finally:
            (workdir / target.mutate).write_bytes(original)

    check()
