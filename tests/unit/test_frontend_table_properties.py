"""Custom table properties: a bad value is a located error naming the property and
why; an internal failure while evaluating one is not disguised as the program's fault."""

from __future__ import annotations

import pytest

from innet.switch.frontend import P4Error, compile_source

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    table t { key = { hdr.h.a : exact; } actions = { NoAction; } my_prop = VALUE; }
    apply { t.apply(); }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Egr(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
"""


def test_custom_property_value_is_evaluated() -> None:
    compile_source(PROGRAM.replace("VALUE", "8w3"), "prop.p4")


def test_bad_property_value_names_property_and_cause() -> None:
    with pytest.raises(P4Error, match=r"prop.p4:10:\d+: error: table 't': cannot evaluate property 'my_prop': "
                                      r".*no_such_thing"):
        compile_source(PROGRAM.replace("VALUE", "no_such_thing"), "prop.p4")


def test_internal_error_is_not_reported_as_a_property_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from innet.switch.frontend import expressions

    original = expressions.Exprs.expr

    def broken(self, tree, *args, **kwargs):  # a bug in building the property's expression
        if "8w3" in str(tree):
            raise AttributeError("internal bug")
        return original(self, tree, *args, **kwargs)

    monkeypatch.setattr(expressions.Exprs, "expr", broken)
    with pytest.raises(AttributeError, match="internal bug"):
        compile_source(PROGRAM.replace("VALUE", "8w3"), "prop.p4")
