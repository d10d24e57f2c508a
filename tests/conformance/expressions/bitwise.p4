#include <core.p4>
#include <v1model.p4>

// & | ^ ~ and operator precedence: & binds tighter than ^, ^ tighter than |, + tighter than <<.
header in_t  { bit<8> a; bit<8> b; bit<16> w; }
header out_t {
    bit<8>  r1;   // a & b
    bit<8>  r2;   // a | b
    bit<8>  r3;   // a ^ b
    bit<8>  r4;   // a | b & 0x0f      == a | (b & 0x0f)
    bit<8>  r5;   // a ^ b | 0x04      == (a ^ b) | 0x04
    bit<8>  r6;   // a + b << 1        == (a + b) << 1
    bit<16> r7;   // w & 0xff00 | (bit<16>)a
    bit<8>  r8;   // ~a
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
        h.o.r1 = h.i.a & h.i.b;
        h.o.r2 = h.i.a | h.i.b;
        h.o.r3 = h.i.a ^ h.i.b;
        h.o.r4 = h.i.a | h.i.b & 0x0f;
        h.o.r5 = h.i.a ^ h.i.b | 0x04;
        h.o.r6 = h.i.a + h.i.b << 1;
        h.o.r7 = h.i.w & 0xff00 | (bit<16>)h.i.a;
        h.o.r8 = ~h.i.a;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.i); pkt.emit(h.o); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
