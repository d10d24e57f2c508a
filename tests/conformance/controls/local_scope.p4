#include <core.p4>
#include <v1model.p4>

// Local variables declared in nested blocks, nested if / else if chains, a block statement.
header h_t { bit<8> a; bit<8> r; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> acc = 0;
        if (h.h.a > 10) {
            bit<8> t = h.h.a - 10;
            if (t > 10) { acc = 3; } else { acc = 2; }
            acc = acc + t;
        } else {
            if (h.h.a == 0) { acc = 0xf0; }
            else if (h.h.a == 1) { acc = 0xf1; }
            else { acc = 0xf2; }
        }
        {
            bit<8> t2 = 7;
            acc = acc ^ t2;
        }
        h.h.r = acc;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
