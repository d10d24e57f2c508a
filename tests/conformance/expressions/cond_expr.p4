#include <core.p4>
#include <v1model.p4>

// The conditional operator ?: , nested, and used for an absolute difference.
header h_t { bit<8> a; bit<8> b; bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.h.r1 = h.h.a > h.h.b ? h.h.a : h.h.b;
        h.h.r2 = h.h.a == 0 ? 8w1 : (h.h.a < 0x10 ? 8w2 : (h.h.a < 0x80 ? 8w3 : 8w4));
        h.h.r3 = h.h.a > h.h.b ? h.h.a - h.h.b : h.h.b - h.h.a;
        h.h.r4 = (h.h.a & 1) == 1 ? h.h.b : ~h.h.b;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
