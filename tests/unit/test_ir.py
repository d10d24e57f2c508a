"""The IR contract: type helpers, node identity semantics, program traversal."""

from __future__ import annotations

from innet.switch.frontend import compile_source, ir


def test_types_are_frozen_and_structural() -> None:
    assert ir.BitT(8) == ir.BitT(8) and hash(ir.BitT(8)) == hash(ir.BitT(8))
    assert ir.BitT(8) != ir.BitT(8, True)
    assert ir.BoolT() != ir.BitT(1)
    h1 = ir.HeaderT("h", (ir.Field("a", ir.BitT(8), {"x": ir.Annotation("x")}),))
    h2 = ir.HeaderT("h", (ir.Field("a", ir.BitT(8)),))
    assert h1 == h2 and hash(h1) == hash(h2)  # annotations do not take part in equality
    assert str(ir.BitT(4, True)) == "int<4>" and str(ir.StackT(h1, 3)) == "h[3]"


def test_nodes_compare_by_identity() -> None:
    a = ir.Const(1, ir.BitT(8))
    b = ir.Const(1, ir.BitT(8))
    assert a != b and a == a


def test_type_width_and_enum_values() -> None:
    e = ir.EnumT("E", ("A", "B"), ir.BitT(4), (3, 9))
    h = ir.HeaderT("h", (ir.Field("a", ir.BitT(3)), ir.Field("b", ir.BoolT()),
                         ir.Field("c", e)))
    assert h.width == 8 and ir.type_width(h) == 8
    assert ir.type_width(ir.StackT(h, 3)) == 24
    assert e.value_of("B") == 9
    assert h.field("c") is h.fields[2] and h.field("zz") is None


def test_action_data_params_and_loc_str() -> None:
    p1 = ir.Param("x", "inout", ir.BitT(8), 1)
    p2 = ir.Param("d", None, ir.BitT(8), 2)
    a = ir.Action("a", "C.a", (p1, p2), ir.Block(()))
    assert a.data_params == (p2,)
    assert str(ir.Loc("f.p4", 3, 4)) == "f.p4:3:4"


def test_program_reachable_blocks_and_header_types() -> None:
    src = """#include <v1model.p4>
@controller_header("packet_in") header pin_t { bit<9> port; }
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control Sub(inout headers_t hdr) { apply { } }
control Unused(inout headers_t hdr) { apply { } }
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    Sub() s; apply { s.apply(hdr); }
}
control Egr(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
"""
    p = compile_source(src, "r.p4")
    paths = [b.instance_path for b in p.reachable_blocks()]
    assert paths == ["P", "VC", "Ing", "Egr", "CC", "D", "Ing.s"]
    assert "Unused" in p.controls and "Unused" not in paths
    assert [h.name for h in p.header_types() if "controller_header" in h.annotations] == ["pin_t"]
    assert "NoAction" in p.actions and p.actions["NoAction"].cp_name == "NoAction"
    assert p.externs["register"].type_params == ("T",)
    assert {m.name for m in p.externs["packet_in"].methods} >= {"extract", "lookahead",
                                                                "advance", "length"}
