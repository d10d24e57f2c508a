#include <core.p4>
#include <v1model.p4>

// Slices as l-values: a slice of a slice (x[7:4][2:1] is x[6:5]), on a header field and on a
// local variable, next to a plain slice of a local.
header h_t { bit<8> a; bit<8> b; bit<8> c; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.h.a[7:4][2:1] = 2w0;
        bit<8> n = h.h.b;
        n[7:4][3:0][1:0] = 2w3;
        h.h.b = n;
        bit<8> k = 0;
        k[3:0] = h.h.c[7:4];
        h.h.c = k;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
