#include <core.p4>
#include <v1model.p4>

// exit inside an action still copies its inout argument back (P4_16: exit runs the copy-out
// of the calls it leaves); the statement after the call is skipped. A header stack element
// picked by a run-time index is written. extract<H>(_) checks the bytes of H and skips them.
// (The order of evaluation in an assignment is in lvalue_order.p4: p4c 1.2.5.16 compiles it
// against the spec for BMv2.)
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> idx; }
header s_t { bit<8> v; }
struct headers_t { h_t h; s_t[2] s; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.h);
        pkt.extract<s_t>(_);
        pkt.extract(h.s.next);
        pkt.extract(h.s.next);
        transition accept;
    }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action set_exit(inout bit<8> x) { x = 0x77; exit; }
    apply {
        sm.egress_spec = 1;
        h.h.c = 1;
        h.s[h.h.idx].v = 0x55;
        set_exit(h.h.a);
        h.h.b = 0x99;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); pkt.emit(h.s); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
