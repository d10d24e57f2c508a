#include <core.p4>
#include <v1model.p4>

// In an assignment the left side is evaluated before the right (P4_16 8.4): a function on the
// right that bumps the index does not move the target. p4c 1.2.5.16 inlines the call before
// the target's index for BMv2 (s[idx + 1] is written; out of range, simple_switch aborts), so
// only innet's target runs this test (lvalue_order.innet.stf).
header h_t { bit<8> idx; }
header s_t { bit<8> v; }
struct headers_t { h_t h; s_t[2] s; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.h);
        pkt.extract(h.s.next);
        pkt.extract(h.s.next);
        transition accept;
    }
}
bit<8> bump(inout bit<8> i) { i = i + 1; return 0x55; }

control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.s[h.h.idx].v = bump(h.h.idx);
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); pkt.emit(h.s); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
