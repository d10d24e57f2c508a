"""p4c's STF dialect (innet.switch.stf_dialect) and the repository's STF files against it.

The accepted and refused forms below come from p4c's ``tools/stf/stf_lexer.py``,
``stf_parser.py`` and ``backends/bmv2/bmv2stf.py``, and from ``simple_switch_CLI``, which
receives the commands the driver passes through.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from innet.conformance import run_file, stf_files
from innet.switch.stf import parse_stf
from innet.switch.stf_dialect import DIALECT_COMMENT, INNET_SUFFIX, NOT_BMV2_COMMENT, check_p4c_dialect, program_for

REPO = Path(__file__).resolve().parents[2]

ACCEPTED = [
    "# a comment line",
    "   # an indented comment",
    "add t h.k:0x12 a(v:0x01)",
    "add MyIngress.t 10 h.k:0x12** a(v:1, port:2)   # priority, '*' nibbles, trailing comment",
    "ADD t h.k:0b10*1 a()",
    "add t hdr.ipv4.dst:0x0a000000/8 fwd(port:1)",
    "add t h.k1:1 h.k2:0xFF a(p:3) = E1",
    "add t stack[2].f:7 a()",
    "add t h.$valid$:1 a()",
    'add "MyIngress.t" h.k:1 a()',
    "setdefault t dflt(v:0x22)",
    "setdefault MyIngress.switch_addr set_switch_addr(mac:0x000000000100, ip:0x0a0000fe)",
    "packet 0 01 02 ff",
    "packet 10 000000000100 00000000a001 0800",
    "expect 1 01 ** ff $",
    "expect 2 *",
    "expect 2 0102$",
    "wait",
    "check_counter c(1)",
    "check_counter c(1) packets == 2",
    "check_counter c(0x3) bytes >= 64",
    "check_counter c(A) packets != 0",
    "mc_mgrp_create 1",
    "mc_node_create 0 1 2 3",
    "mc_node_associate 1 0",
    "mirroring_add 5 3",
    "mirroring_add_mc 5 3",
    "register_write MyIngress.r 0 4294967295",
    "register_read r 3",
    "register_reset r",
    "counter_read c 2",
    "counter_write c 2 1 64",
    "meter_array_set_rates m 0.0001:1 0.0005:1",
    "meter_set_rates m 0 1:1 2:1",
]


@pytest.mark.parametrize("line", ACCEPTED)
def test_accepted(line: str) -> None:
    assert check_p4c_dialect(line) == []


REFUSED = [
    ("register_read MyIngress.r 5 0xfffffc96", "register_read", r"expected value is innet-only"),
    ("counter_read c 2 1", "counter_read", r"use check_counter"),
    ("register_write r 0 0x63", "0x63", r"decimal numbers only"),
    ("mc_node_create 0x1 2", "0x1", r"decimal numbers only"),
    ("check_counter Ing.c(1) packets == 2", "Ing.c", r"bare counter name"),
    ("check_counter c(3) == 0", "==", r"'packets' or 'bytes'"),
    ("act_prof_create_member ap set_a(v:0x11, port:2)", "act_prof_create_member", r"not a command of p4c's STF"),
    ("add t h.k:0x05 member(0)", "0", r"action parameter name"),
    ("add t h.k:0x10&&&0xf0 a()", "&", r"no token for '&'"),
    ("add t h.k:1..5 a()", ".", r"wants"),
    ("add t -1 h.k:1 a()", "-", r"no token for '-'"),
    ("add t h.k:0o17 a()", "0o17", r"not one number"),
    ("add t h.k:1_000 a()", "1_000", r"no '_'"),
    ("register_write r 0 12ab", "12ab", r"not one number"),
    ("add t h.k:07 a()", "07", r"leading zero"),
    ("add t 0x10 h.k:1 a()", "0x10", r"wants a name"),
    ("add t a(v:1)", "a", r"at least one key"),
    ("add t h.k:1 a(1)", "1", r"action parameter name"),
    ("add t h.k:1 a(v:0x1*)", "0x1*", r"no '\*' digits"),
    ("add t h.k:1 a(h.v:1)", ".", r"wants ':'"),
    ("add t h.k:1 a(packets:1)", "packets", r"keyword in p4c's STF lexer"),
    ("add t h.s[0].f:1 a()", "h.s[", r"index only on their first part"),
    ("add t h.k:1", "add", r"the line ends"),
    ("add t h.k:1 a() extra", "extra", r"the end of the line"),
    ("packet 0 01 02 # a comment", "#", r"no comment on a packet line"),
    ("expect 1 0x0102", "0x", r"without 0x"),
    ("packet 0 012", "packet", r"whole bytes"),
    ("packet 0", "packet", r"needs data"),
    ("packet 0 01*2", "*", r"hex digits only"),
    ("packet ab 01", "packet", r"decimal port"),
    ("packet x 01", "x", r"no packet-data token"),
    ("expect 1", "expect", r"'\*' for any content"),
    ("expect 1 01 $ 02", "$", r"only end"),
    ("no_packet", "no_packet", r"int\(None\)"),
    ("no_packet 2", "no_packet", r"int\(None\)"),
    ("mc_node_update 0 1 2", "mc_node_update", r"never sends it"),
    ("remove all", "remove", r"reads 'all'"),
    ("add t h.k:1 a()\r", "\\r", r"carriage return"),
    ("0x12 foo", "0x12", r"start with a command"),
]


@pytest.mark.parametrize(("line", "construct", "reason"), REFUSED)
def test_refused(line: str, construct: str, reason: str) -> None:
    problems = check_p4c_dialect("# header\n" + line)
    assert [(p.line, p.construct) for p in problems] == [(2, construct)]
    assert str(problems[0]).startswith(f"line 2: {construct!r}: ")
    assert re.search(reason, problems[0].reason), problems[0].reason


def test_every_refused_line_is_reported_in_order() -> None:
    text = "add t h.k:1 a()\nno_packet\npacket 0 00\nregister_read r 1 2\n"
    assert [p.line for p in check_p4c_dialect(text)] == [2, 4]


def test_program_for_pairs_both_dialects() -> None:
    assert program_for(Path("d/x.stf")) == Path("d/x.p4")
    assert program_for(Path("d/x.innet.stf")) == Path("d/x.p4")
    assert program_for(Path("d/innet.innet.stf")) == Path("d/innet.p4")


def test_conformance_runs_innet_dialect_files(tmp_path: Path) -> None:
    src = REPO / "tests" / "conformance" / "tables"
    (tmp_path / "action_profile.p4").write_text((src / "action_profile.p4").read_text())
    stf = tmp_path / "action_profile.innet.stf"
    stf.write_text((src / "action_profile.innet.stf").read_text())
    assert stf_files(tmp_path) == [stf]
    result = run_file(stf, tmp_path)
    assert result.passed, result.message
    assert result.packets == 6


def _repo_stf_files() -> list[Path]:
    """Every STF file of the repository (not only the suites: a ``.stf`` anywhere is p4c's dialect)."""
    skip = {".venv", ".git", "results", "build", "node_modules"}
    return sorted(p for p in REPO.rglob("*.stf") if not skip & set(p.relative_to(REPO).parts))


@pytest.mark.parametrize("stf", _repo_stf_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_repo_stf_file_is_in_its_dialect(stf: Path) -> None:
    """NAME.innet.stf says it is innet's dialect on line 1; every other STF file is p4c's."""
    text = stf.read_text()
    if stf.name.endswith(INNET_SUFFIX):
        first = text.split("\n", 1)[0]
        if first.startswith(NOT_BMV2_COMMENT):
            assert len(first) > len(NOT_BMV2_COMMENT) + 10, f"{stf.name}: say why BMv2 cannot run it"
            parse_stf(text, str(stf))
            return
        assert first.startswith(DIALECT_COMMENT) and "(not in p4c's STF" in first, first
        assert check_p4c_dialect(text), f"{stf.name} is in p4c's dialect: name it {stf.name[:-len(INNET_SUFFIX)]}.stf"
    else:
        problems = check_p4c_dialect(text)
        assert not problems, f"{stf}: " + "; ".join(map(str, problems))
    parse_stf(text, str(stf))  # and innet reads it


def test_repo_stf_files_outside_the_suites_are_checked() -> None:
    assert REPO / "tests" / "unit" / "native_diff" / "meters.stf" in _repo_stf_files()


def test_repo_has_both_dialects() -> None:
    names = {p.name for p in _repo_stf_files()}
    assert "innet.stf" in names and "innet.innet.stf" in names
    assert "action_profile.innet.stf" in names and "action_profile.stf" not in names
