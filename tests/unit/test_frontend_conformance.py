"""Every BMv2-confirmed conformance program (tests/conformance/bmv2) compiles, with sane IR."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.switch.frontend import compile_file, ir

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance" / "bmv2"
PROGRAMS = sorted(CONFORMANCE.glob("*.p4"))


def test_corpus_present() -> None:
    assert len(PROGRAMS) >= 21


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_conformance_program_compiles(path: Path) -> None:
    p = compile_file(path)
    assert p.main is not None and len(p.main.args) == 6
    kinds = [type(a.decl) for a in p.main.args]
    assert kinds == [ir.Parser] + [ir.Control] * 5
    assert "start" in p.main.args[0].decl.states  # type: ignore[union-attr]
    assert str(path) in p.source_files


def test_lpm_overlap_table_details() -> None:
    p = compile_file(CONFORMANCE / "lpm_overlap.p4")
    ing = p.main.args[2].decl  # type: ignore[union-attr]
    assert isinstance(ing, ir.Control)
    t = ing.tables[0]
    assert t.keys[0].match_kind == "lpm"
    assert t.default_action.action.name == "miss"
    assert [a.value for a in t.default_action.args] == [0xEE, 0x42]  # type: ignore[attr-defined]


def test_resubmit_field_list_annotations() -> None:
    p = compile_file(CONFORMANCE / "resubmit_recirc.p4")
    m = p.types["meta_t"]
    assert isinstance(m, ir.StructT)
    assert {f.name: f.annotations.get("field_list") and f.annotations["field_list"].body
            for f in m.fields} == {"rs": (1,), "rc": (2,), "lost": None}
