"""varbit headers: what stays a located error (the STF test parser/varbit_extract covers
the supported behaviour)."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.switch.frontend import P4Error, compile_source
from innet.switch.pipeline import Pipeline, UnsupportedError

PROGRAM = (Path(__file__).resolve().parents[1] / "conformance" / "parser" / "varbit_extract.p4").read_text()


def test_one_argument_extract_of_a_varbit_header_is_a_located_error() -> None:
    src = PROGRAM.replace("pkt.extract(h.o1, (bit<32>)h.b.n1);", "pkt.extract(h.o1);")
    # the front-end refuses it, as p4c's does ("argument cannot contain varbit fields")
    with pytest.raises(P4Error, match=r"<string>:19:21: error: extract with one argument cannot take header "
                                      r"opt_t, which has a varbit field"):
        compile_source(src)


def test_two_argument_extract_needs_a_varbit_field() -> None:
    src = PROGRAM.replace("pkt.extract(h.o1, (bit<32>)h.b.n1);", "pkt.extract(h.b, 8);")
    with pytest.raises(UnsupportedError, match=r"<string>:\d+:\d+: unsupported: two-argument extract into "
                                               r"header base_t, which has 0 varbit fields"):
        Pipeline(compile_source(src))


def test_lookahead_of_a_varbit_header_is_a_located_error() -> None:
    src = PROGRAM.replace("pkt.extract(h.o1, (bit<32>)h.b.n1);", "h.o1 = pkt.lookahead<opt_t>();")
    # the front-end refuses it, as p4c's does ("type argument must be a fixed-width type")
    with pytest.raises(P4Error, match=r"<string>:19:\d+: error: lookahead<opt_t>: the type argument must be a "
                                      r"fixed-width type"):
        compile_source(src)
