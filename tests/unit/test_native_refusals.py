"""The native executor's refusals: located (file:line:col, the construct), listed, and the
selection logic's fallback to python with one stderr line."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from innet.switch.frontend import compile_file
from innet.native_build import compiler_path
from innet.switch.native.errors import NativeUnsupported
from innet.switch.native.select import ExecutorError, load_pipeline, native_refusal
from innet.switch.pipeline import Pipeline

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from conftest import native_refusals  # noqa: E402

LISTED = sorted(native_refusals().items())


@pytest.mark.parametrize("path,text", LISTED or [pytest.param(
    "", "", marks=pytest.mark.skip(reason="native_refusals.txt lists no program: the native executor runs them all"))],
    ids=[p for p, _ in LISTED] or ["none listed"])
def test_listed_programs_are_refused_with_a_location(path: str, text: str) -> None:
    program = compile_file(str(REPO / path))
    why = native_refusal(program)
    assert why is not None and text in why
    assert re.match(rf"{re.escape(str(REPO / path))}:\d+:\d+: unsupported: ", why), why


WIDE = ("#include <core.p4>\n#include <v1model.p4>\n"
        "header h_t { bit<128> addr; }\nstruct H { h_t h; }\nstruct M { }\n"
        "parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {\n"
        "  state start { p.extract(h.h); transition accept; } }\n"
        "control VC(inout H h, inout M m) { apply { } }\n"
        "control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }\n"
        "control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }\n"
        "control CC(inout H h, inout M m) { apply { } }\n"
        "control D(packet_out p, in H h) { apply { p.emit(h.h); } }\n"
        "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n")
"""A program with a bit<128> field: the native executor runs it (multi-word values)."""

VARBIG = WIDE.replace("header h_t { bit<128> addr; }", "header h_t { bit<8> n; varbit<16384> v; }").replace(
    "p.extract(h.h);", "p.extract(h.h, 0);")
"""A program the native executor refuses (a varbit wider than varbit<8191>)."""


def test_auto_falls_back_to_python_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "varbig.p4"
    src.write_text(VARBIG)
    pl = load_pipeline(compile_file(str(src)), "auto")
    assert type(pl) is Pipeline
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("innet: executor python (native executor not used: ")
    assert "varbig.p4:" in err[0] and "varbit<16384>" in err[0]


def test_native_insists(tmp_path: Path) -> None:
    src = tmp_path / "varbig.p4"
    src.write_text(VARBIG)
    with pytest.raises(NativeUnsupported, match=r"varbig\.p4:\d+:\d+: unsupported: field h_t.v of type varbit<16384>"):
        load_pipeline(compile_file(str(src)), "native")


@pytest.mark.skipif(compiler_path() is None, reason="native executor needs a C compiler (cc/gcc)")
def test_auto_picks_native_for_basic_forward(capsys: pytest.CaptureFixture[str]) -> None:
    from innet.switch.native.pipeline import NativePipeline

    pl = load_pipeline(compile_file(str(REPO / "p4/examples/basic_forward.p4")), "auto")
    assert isinstance(pl, NativePipeline)
    assert capsys.readouterr().err == ""


def test_wide_varbit_is_refused_naming_it(tmp_path: Path) -> None:
    src = tmp_path / "varbig.p4"
    src.write_text(VARBIG)
    why = native_refusal(compile_file(str(src)))
    assert why is not None
    assert re.match(rf"{re.escape(str(src))}:\d+:\d+: unsupported: field h_t.v of type varbit<16384>", why), why


@pytest.mark.skipif(compiler_path() is None, reason="native executor needs a C compiler (cc/gcc)")
def test_auto_picks_native_for_a_bit128_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from innet.switch.native.pipeline import NativePipeline

    src = tmp_path / "wide.p4"
    src.write_text(WIDE)
    assert native_refusal(compile_file(str(src))) is None
    pl = load_pipeline(compile_file(str(src)), "auto")
    assert isinstance(pl, NativePipeline)
    assert capsys.readouterr().err == ""
    out = pl.process(0, bytes(range(16)) + b"tail")
    assert out == [(1, bytes(range(16)) + b"tail")]


def test_unknown_executor() -> None:
    with pytest.raises(ExecutorError, match="unknown executor 'fast' \\(choose one of auto, native, python\\)"):
        load_pipeline(compile_file(str(REPO / "p4/examples/basic_forward.p4")), "fast")
