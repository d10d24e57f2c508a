#include <core.p4>
#include <v1model.p4>

// Literal forms: width-prefixed (8w5, 16w0xBEEF), signed (-16s3, -32s0xFF), binary and octal
// with separators, a signed binary literal that wraps (8s0b1010_1010 is -86), unsized
// constants, casts of negative constants, and wrapping constant folding.
const int<8> SB = 8s0b1010_1010;
const int<32> NEG = -32s0xFF;

header in_t { bit<8> x; }
header out_t {
    bit<8>  f1;   // 8w5
    int<16> f2;   // -16s3
    bit<8>  f3;   // 8w0b1010_1010
    bit<16> f4;   // 16w0xBEEF
    int<8>  f5;   // 8s0b1010_1010
    int<32> f6;   // -32s0xFF
    bit<8>  f7;   // 8w255 + 8w1
    bit<8>  f8;   // 8w0o17
    bit<8>  f9;   // 100 + 55
    bit<8>  f10;  // (bit<8>)-1
    bit<8>  f11;  // 8w2 - 8w3
    bit<8>  f12;  // x + 8w0x10
}
struct headers_t { in_t i; out_t o; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.i); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        h.o.f1 = 8w5;
        h.o.f2 = -16s3;
        h.o.f3 = 8w0b1010_1010;
        h.o.f4 = 16w0xBEEF;
        h.o.f5 = SB;
        h.o.f6 = NEG;
        h.o.f7 = 8w255 + 8w1;
        h.o.f8 = 8w0o17;
        h.o.f9 = 100 + 55;
        h.o.f10 = (bit<8>)-1;
        h.o.f11 = 8w2 - 8w3;
        h.o.f12 = h.i.x + 8w0x10;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.i); pkt.emit(h.o); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
