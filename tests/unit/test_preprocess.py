"""Preprocessing with the system cpp: includes, macros, conditionals, position mapping."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.switch.frontend import FrontendError, P4Error, compile_file, compile_source
from innet.switch.frontend.preprocess import P4_INCLUDE_DIR, preprocess_file, preprocess_source

MAIN_TAIL = """
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control Egr(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
"""


def test_include_dir_always_on_path() -> None:
    pp = preprocess_source("#include <v1model.p4>\nconst bit<8> X = 1;\n", "a.p4")
    assert str(P4_INCLUDE_DIR / "v1model.p4") in pp.files()
    assert str(P4_INCLUDE_DIR / "core.p4") in pp.files()
    line = pp.text.splitlines().index("const bit<8> X = 1;") + 1
    loc = pp.loc(line, 7)
    assert (loc.file, loc.line, loc.col) == ("a.p4", 2, 7)


def test_user_include_dirs_and_quotes(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "hdrs.p4").write_text("header h_t { bit<8> a; }\nstruct headers_t { h_t h; }\n")
    (tmp_path / "meta.p4").write_text("struct meta_t { bit<8> x; }\n")
    main = tmp_path / "main.p4"
    main.write_text('#include <core.p4>\n#include <v1model.p4>\n#include <hdrs.p4>\n'
                    '#include "meta.p4"\n' + MAIN_TAIL)
    p = compile_file(main, include_dirs=(inc,))
    assert "h_t" in p.types and "meta_t" in p.types
    assert str(inc / "hdrs.p4") in p.source_files


def test_defines_object_like_and_multiline() -> None:
    src = ("#include <core.p4>\n#include <v1model.p4>\n#define WIDTH 16\n"
           "#define FIELDS bit<WIDTH> a; \\\n    bit<8> b;\n"
           "header h_t { FIELDS }\nstruct headers_t { h_t h; }\nstruct meta_t { bit<8> x; }\n"
           + MAIN_TAIL)
    p = compile_source(src, "d.p4", defines={"UNUSED": None})
    h = p.types["h_t"]
    assert [f.type.width for f in h.fields] == [16, 8]  # type: ignore[attr-defined]


def test_command_line_defines_and_conditionals() -> None:
    src = ("#include <core.p4>\n#include <v1model.p4>\n"
           "#if MODE == 2\nheader h_t { bit<16> a; }\n#elif MODE == 1\n"
           "header h_t { bit<8> a; }\n#else\nheader h_t { bit<32> a; }\n#endif\n"
           "#ifdef EXTRA\nstruct meta_t { bit<8> x; bit<8> extra; }\n#else\n"
           "struct meta_t { bit<8> x; }\n#endif\n"
           "#ifndef NOPE\nstruct headers_t { h_t h; }\n#endif\n" + MAIN_TAIL)
    p1 = compile_source(src, "c.p4", defines={"MODE": "1", "EXTRA": None})
    assert p1.types["h_t"].fields[0].type.width == 8  # type: ignore[attr-defined]
    assert len(p1.types["meta_t"].fields) == 2  # type: ignore[attr-defined]
    p2 = compile_source(src, "c.p4", defines={"MODE": "2"})
    assert p2.types["h_t"].fields[0].type.width == 16  # type: ignore[attr-defined]
    assert len(p2.types["meta_t"].fields) == 1  # type: ignore[attr-defined]
    p3 = compile_source(src, "c.p4")
    assert p3.types["h_t"].fields[0].type.width == 32  # type: ignore[attr-defined]


def test_error_position_inside_included_file(tmp_path: Path) -> None:
    (tmp_path / "bad.p4").write_text("// comment line\nheader h_t {\n  bit<8> a;\n  bogus_t b;\n}\n")
    main = tmp_path / "main.p4"
    main.write_text('#include <core.p4>\n#include "bad.p4"\n')
    with pytest.raises(P4Error) as ei:
        compile_file(main)
    e = ei.value
    assert e.loc.file == str(tmp_path / "bad.p4")
    assert (e.loc.line, e.loc.col) == (4, 3)
    assert "unknown type 'bogus_t'" in str(e)
    assert "  bogus_t b;" in str(e).splitlines()[1]


def test_missing_include_shows_cpp_message() -> None:
    with pytest.raises(P4Error, match=r"m\.p4:2:10: error: preprocessing failed: nothere\.p4: "
                                      r"No such file or directory"):
        compile_source("// x\n#include <nothere.p4>\n", "m.p4")


def test_error_directive_is_reported() -> None:
    with pytest.raises(P4Error, match=r"e\.p4:1:2: error: preprocessing failed: #error stop here"):
        compile_source("#error stop here\n", "e.p4")


def test_missing_cpp_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import innet.switch.frontend.preprocess as pre
    monkeypatch.setattr(pre.shutil, "which", lambda name: None)
    with pytest.raises(FrontendError, match="'cpp' was not found"):
        compile_source("", "x.p4")


def test_missing_file() -> None:
    with pytest.raises(FrontendError, match="does not exist"):
        preprocess_file("/nonexistent/dir/x.p4")


def test_byte_not_utf8_in_a_string_literal_is_located(tmp_path: Path) -> None:
    src = tmp_path / "s.p4"
    src.write_bytes(b'// fine: caf\xe9\nconst bit<8> X = 1; /* \xff */ @name("a // caf\xe9") const bit<8> Y = 2;\n')
    with pytest.raises(P4Error, match=r"s\.p4:2:44: error: byte 0xe9 is not valid UTF-8 \(byte 44 of the line\)"):
        preprocess_file(src)


def test_comments_with_other_encodings_become_replacement_characters(tmp_path: Path) -> None:
    src = tmp_path / "c.p4"
    src.write_bytes(b"/* caf\xe9 */ const bit<8> X = 1; // \xff\n")
    assert preprocess_file(src).text.splitlines()[-1] == "/* caf\ufffd */ const bit<8> X = 1; // \ufffd"


def test_directory_is_not_reported_as_missing(tmp_path: Path) -> None:
    with pytest.raises(FrontendError, match=r"P4 source file '.*' is a directory"):
        preprocess_file(tmp_path)
