"""Small executor behaviours: aggregate-returning functions, located errors for what stays
unsupported (random hash algorithm), and STF ``no_packet``."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.switch.frontend import compile_source
from innet.switch.pipeline import Pipeline, UnsupportedError
from innet.switch.stf import parse_stf, run_test

PROGRAM = (Path(__file__).resolve().parents[1] / "conformance" / "controls" / "function_aggregates.p4").read_text()
APPLY = PROGRAM[PROGRAM.index("    apply {\n        pair_t"):PROGRAM.index("control Egr")]


def with_apply(body: str) -> str:
    return PROGRAM.replace(APPLY, "    apply { " + body + " }\n}\n")


def test_function_results_are_struct_and_header_values() -> None:
    pl = Pipeline(compile_source(with_apply(
        "swap({ 1, 2 }); pair_t q = swap({ h.h.a, h.h.b }); h.h.a = q.x; h.h.b = q.y; "
        "h.t = tag(h.t.v); sm.egress_spec = 2;")))
    assert pl.process(0, bytes([1, 2, 3])) == [(2, bytes([2, 1, 3]))]
    assert pl.process(0, bytes([1, 2, 0])) == [(2, bytes([2, 1]))]  # tag(0) is invalid


def test_random_hash_algorithm_is_a_located_error() -> None:
    src = with_apply("bit<16> x; hash(x, HashAlgorithm.random, 16w0, { h.h.a }, 32w100); h.h.a = (bit<8>)x;")
    with pytest.raises(UnsupportedError, match=r"<string>:\d+:\d+: unsupported: hash algorithm random"):
        Pipeline(compile_source(src))


def test_stf_no_packet_observes_a_port() -> None:
    pl = Pipeline(compile_source(with_apply("sm.egress_spec = 3;")))
    leak = run_test(pl, parse_stf("packet 0 01 02 03\nno_packet 3\n"))
    assert not leak.passed and "port 3: expected 0 packet(s), got 1" in leak.message
    quiet = run_test(pl, parse_stf("packet 0 01 02 03\nno_packet 4\nexpect 3 01 02 03 $\n"))
    assert quiet.passed, quiet.message
