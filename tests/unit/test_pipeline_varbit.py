"""varbit headers: what stays a located error (the STF test parser/varbit_extract covers
the supported behaviour)."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.switch.frontend import compile_source
from innet.switch.pipeline import Pipeline, UnsupportedError

PROGRAM = (Path(__file__).resolve().parents[1] / "conformance" / "parser" / "varbit_extract.p4").read_text()


def test_one_argument_extract_of_a_varbit_header_is_a_located_error() -> None:
    src = PROGRAM.replace("pkt.extract(h.o1, (bit<32>)h.b.n1);", "pkt.extract(h.o1);")
    with pytest.raises(UnsupportedError, match=r"<string>:19:9: unsupported: header opt_t has a varbit "
                                               r"field: extract it with extract\(hdr, sizeInBits\)"):
        Pipeline(compile_source(src))


def test_two_argument_extract_needs_a_varbit_field() -> None:
    src = PROGRAM.replace("pkt.extract(h.o1, (bit<32>)h.b.n1);", "pkt.extract(h.b, 8);")
    with pytest.raises(UnsupportedError, match=r"<string>:\d+:\d+: unsupported: two-argument extract into "
                                               r"header base_t, which has 0 varbit fields"):
        Pipeline(compile_source(src))


def test_lookahead_of_a_varbit_header_is_a_located_error() -> None:
    src = PROGRAM.replace("pkt.extract(h.o1, (bit<32>)h.b.n1);", "h.o1 = pkt.lookahead<opt_t>();")
    with pytest.raises(UnsupportedError, match=r"lookahead of header opt_t, which has a varbit field"):
        Pipeline(compile_source(src))
