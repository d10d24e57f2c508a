"""packet_in/packet_out code generation (switch/pipeline/externgen.py): errors it raises
at load time point at the P4 source."""

from __future__ import annotations

import pytest

from innet.switch.frontend import compile_source
from innet.switch.pipeline import Pipeline, UnsupportedError

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<12> a; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { %s transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { %s } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
"""


@pytest.mark.parametrize("extract, emit, line", [
    ("pkt.extract(h.h);", "", 8),
    ("", "pkt.emit(h.h);", 14),
])
def test_header_of_partial_bytes_is_a_located_error(extract: str, emit: str, line: int) -> None:
    """Found by tests/fuzz/test_fuzz_frontend.py (a mutant widened a field): the error had
    no file:line:col because it was located at the header type, which carries none."""
    program = compile_source(PROGRAM % (extract, emit), filename="odd.p4")
    with pytest.raises(UnsupportedError, match=rf"^odd\.p4:{line}:\d+: unsupported: .*header h_t of 12 bits"):
        Pipeline(program)


def test_advance_by_partial_bytes_is_a_located_error() -> None:
    program = compile_source(PROGRAM % ("pkt.advance(12);", ""), filename="odd.p4")
    with pytest.raises(UnsupportedError, match=r"^odd\.p4:8:\d+: unsupported: advance by 12 bits"):
        Pipeline(program)
