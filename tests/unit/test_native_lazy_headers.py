"""Headers whose fields skip the template copy before parsing (cgen.Unit.lazy_headers):
only headers the parser writes by extracting alone, and the packet results stay those of
the python executor either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.native_build import compiler_path
from innet.switch.frontend import compile_file, compile_source
from innet.switch.native import cgen

REPO = Path(__file__).resolve().parents[2]
FIELDS = " ".join(f"bit<8> f{i};" for i in range(64))
PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header small_t { bit<8> kind; }
header big_t { %(fields)s }
struct headers { small_t s; big_t b; }
struct meta_t { }
parser P(packet_in p, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        p.extract(hdr.s);
        %(parser_extra)s
        transition select(hdr.s.kind) { 1: big; default: accept; }
    }
    state big { p.extract(hdr.b); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { hdr.s.kind = hdr.b.f7; sm.egress_spec = 1; }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out p, in headers hdr) { apply { p.emit(hdr.s); p.emit(hdr.b); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _lazy(parser_extra: str = "") -> list[tuple[int, int, int]]:
    unit = cgen.Unit(compile_source(PROGRAM % {"fields": FIELDS, "parser_extra": parser_extra}))
    unit.generate()
    return unit.lazy


def test_a_header_only_extracted_is_lazy() -> None:
    (lazy,) = _lazy()
    assert lazy[2] == 64


@pytest.mark.parametrize("extra", ["hdr.b.f3 = 9;", "hdr.b.setValid();", "hdr.b.setInvalid();",
                                   "if (hdr.b.f1 == 2) { hdr.s.kind = 3; }"])
def test_other_parser_uses_keep_the_full_copy(extra: str) -> None:
    assert _lazy(extra) == []


def test_programs_with_big_value_headers_are_lazy() -> None:
    for path, defines in ((REPO / "p4" / "examples" / "agg2048.p4", None),
                          (REPO / "p4" / "innet.p4", {"INNET_K": "64"})):
        unit = cgen.Unit(compile_file(str(path), defines=defines))
        unit.generate()
        assert [n for _, _, n in unit.lazy] == [2048 if "agg" in path.name else 64]


@pytest.mark.skipif(compiler_path() is None, reason="native executor needs a C compiler (cc/gcc)")
def test_unextracted_lazy_header_reads_as_the_template() -> None:
    """A packet that does not reach the big header after one that did: its fields read
    as 0 again (the python executor's result), not as the previous packet's bytes."""
    from innet.switch.native.pipeline import NativePipeline
    from innet.switch.pipeline import Pipeline

    program = compile_source(PROGRAM % {"fields": FIELDS, "parser_extra": ""})
    full = bytes([1]) + bytes(range(10, 74))
    short = bytes([2]) + bytes(64)
    native, python = NativePipeline(program), Pipeline(program)
    for frame in (full, short, full, short):
        assert native.process(0, frame) == python.process(0, frame)
    assert native.process(0, short)[0][1][0] == 0
