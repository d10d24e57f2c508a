#include <core.p4>
#include <v1model.p4>

// Slices as r-values and l-values (nibble swap, partial writes), a slice of a slice, and
// concatenation of slices.
header h_t { bit<16> w; bit<8> a; bit<8> r1; bit<8> r2; bit<16> r3; bit<8> r4; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.h.r1 = h.h.w[11:4];
        h.h.r2 = h.h.a;
        h.h.r2[7:4] = h.h.a[3:0];
        h.h.r2[3:0] = h.h.a[7:4];
        h.h.r3 = 0;
        h.h.r3[15:8] = h.h.a;
        h.h.r3[0:0] = h.h.w[15:15];
        h.h.r3[7:1] = h.h.w[6:0];
        h.h.r4 = h.h.w[15:8][3:0] ++ h.h.w[3:0][3:2] ++ 2w0;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
