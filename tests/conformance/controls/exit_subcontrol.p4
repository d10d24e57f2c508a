#include <core.p4>
#include <v1model.p4>

// exit inside a sub-control ends the whole ingress control (the caller's remaining
// statements do not run); egress still runs. Without exit the caller continues.
header h_t { bit<8> k; bit<8> s1; bit<8> s2; bit<8> after; bit<8> eg; }
struct headers_t { h_t h; }
struct meta_t { }

control Sub(in bit<8> k, inout bit<8> s2) {
    apply {
        if (k == 1) { exit; }
        s2 = 2;
    }
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    Sub() sub;
    apply {
        sm.egress_spec = 1;
        h.h.s1 = 1;
        sub.apply(h.h.k, h.h.s2);
        h.h.after = 3;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply { h.h.eg = 4; }
}
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
