#include <core.p4>
#include <v1model.p4>

// Operands are evaluated left to right (P4_16 8.1): the left operand of a binary operator is
// read before a function call on its right side writes the same variable through an inout
// argument.
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
bit<8> reset(inout bit<8> x) { x = 1; return 10; }

control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> v = h.h.a;
        h.h.b = v + reset(v);            // old v + 10; v is 1 afterwards
        h.h.c = v;
        h.h.d = (h.h.a == reset(h.h.a)) ? 8w1 : 8w0;  // compares the old a with 10
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
