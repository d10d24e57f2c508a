#include <core.p4>
#include <v1model.p4>

// return inside an action (directly called) and inside a sub-control: only that action or
// sub-control ends; the caller continues and the sub-control's inout parameter is copied out.
header h_t { bit<8> k; bit<8> r1; bit<8> r2; bit<8> r3; }
struct headers_t { h_t h; }
struct meta_t { }

control Sub(inout bit<8> x, in bit<8> k) {
    apply {
        x = 0x11;
        if (k == 0) { return; }
        x = 0x22;
    }
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    Sub() sub;
    action a(bit<8> v) {
        h.h.r1 = v;
        if (v == 0) { return; }
        h.h.r1 = v + 1;
    }
    apply {
        sm.egress_spec = 1;
        a(h.h.k);
        sub.apply(h.h.r2, h.h.k);
        h.h.r3 = 3;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
