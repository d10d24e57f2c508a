"""Every program under p4/ keeps to the p4c-compatible constructs of docs/p4c-compat.md
(switch/p4c_compat.py), and the check itself catches each kind of violation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from innet.switch.p4c_compat import ANNOTATIONS, check_file, check_tree

REPO = Path(__file__).resolve().parents[2]


def test_every_p4_program_uses_only_p4c_constructs():
    findings = check_tree(REPO / "p4")
    assert [str(f) for f in findings] == []
    assert len(list((REPO / "p4").rglob("*.p4"))) > 10  # the tree was really walked


def test_docs_list_every_allowed_annotation():
    doc = (REPO / "docs" / "p4c-compat.md").read_text()
    assert [a for a in sorted(ANNOTATIONS) if f"@{a}" not in doc] == []


GOOD = """#include <core.p4>
#include <v1model.p4>
// @private in a comment does not count; nor does "extern" in a string
struct m_t {} struct h_t {}
parser P(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t s) { state start { transition accept; } }
control C(inout h_t h, inout m_t m) { apply {} }
control I(inout h_t h, inout m_t m, inout standard_metadata_t s) { @name("x") action a() {} apply {} }
control E(inout h_t h, inout m_t m, inout standard_metadata_t s) { apply {} }
control D(packet_out p, in h_t h) { apply {} }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize("change, message", [
    (("#include <v1model.p4>", "#include <psa.p4>"), r"#include <psa.p4>: only <core.p4> and <v1model.p4>"),
    (("#include <v1model.p4>", '#include "include/v1model.p4"'), r'#include "include/v1model.p4": no such file'),
    (("@name(\"x\")", "@innet_fast"), r"annotation @innet_fast is not in the p4c list"),
    (("struct m_t {}", "extern Fast { Fast(); }\nstruct m_t {}"), r"extern declaration: private architecture"),
    (("#include <core.p4>", "#pragma once\n#include <core.p4>"), r"preprocessor directive #pragma"),
    (("V1Switch(P(), C(), I(), E(), C(), D()) main;", ""), None),
])
def test_violations_are_located(tmp_path, change, message):
    good = tmp_path / "good.p4"
    good.write_text(GOOD)
    assert check_file(good, main=True) == []
    bad = tmp_path / "bad.p4"
    bad.write_text(GOOD.replace(*change))
    findings = check_file(bad, main=True)
    assert len(findings) == 1
    text = str(findings[0])
    assert text.startswith(f"{bad}:")
    if message is None:
        assert "no `V1Switch(...) main;`" in text
    else:
        assert re.search(message, text), text
