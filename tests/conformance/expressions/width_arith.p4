#include <core.p4>
#include <v1model.p4>

// Widths computed from compile-time int expressions, compile-time int arithmetic (shift,
// multiply, divide, modulo), and minSizeInBits / minSizeInBytes / maxSizeInBits /
// maxSizeInBytes of headers.
const int W = 2 * 4;
const int K = (1 << 4) + 3 * 5 - 7 / 2 % 3;      // 16 + 15 - (3 % 3) = 31

header a_t { bit<(2*4)> x; bit<(W + W)> y; bit<4> p; bit<(W - 4)> q; }
header o_t { bit<8> b1; bit<16> b2; bit<16> b3; bit<8> b4; bit<8> c; bit<8> r; }
struct headers_t { a_t a; o_t o; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.a); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        h.o.b1 = h.a.minSizeInBytes();
        h.o.b2 = h.a.minSizeInBits();
        h.o.b3 = h.o.maxSizeInBits();
        h.o.b4 = h.o.maxSizeInBytes();
        h.o.c = K;
        h.o.r = (bit<8>)(h.a.y >> W);
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.a); pkt.emit(h.o); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
