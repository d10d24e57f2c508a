#include <core.p4>
#include <v1model.p4>

// An unsized literal that does not fit the width of the other operand is not an error:
// p4c warns (overflow) and the value wraps to that width, at run time and in constant
// folding alike. 4 / 1w1 is 1w0 / 1w1.
header h_t {
    bit<8> a;   // (bit<8>)(4 / 1w1) = 0
    bit<8> b;   // b + 257: 257 is 8w1
    bit<8> c;   // 8w3 - 300: 300 is 8w44, 3 - 44 wraps to 0xd7
    bit<8> d;   // (bit<8>)(3w7 + 9): 9 is 3w1, 7 + 1 wraps to 0
}
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.h.a = (bit<8>)(4 / 1w1);
        h.h.b = h.h.b + 257;
        h.h.c = 8w3 - 300;
        h.h.d = (bit<8>)(3w7 + 9);
        sm.egress_spec = 1;
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
