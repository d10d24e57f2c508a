#include <core.p4>
#include <v1model.p4>

// Casts: zero and sign extension, truncation, same-width bit <-> int reinterpretation,
// chains of casts, and bool -> bit<1>.
header in_t { bit<8> u; int<8> s; bit<16> w; }
header out_t {
    bit<16> o1;   // (bit<16>)u
    bit<16> o2;   // (bit<16>)(int<16>)s
    bit<8>  o3;   // (bit<8>)(bit<4>)w
    int<8>  o4;   // (int<8>)(int<4>)(bit<4>)u
    bit<32> o5;   // (bit<32>)(int<32>)(int<16>)w
    bit<8>  o6;   // (bit<8>)(w >> 4)
    bit<8>  o7;   // (bit<8>)(bit<1>)(u > 0x7f)
    int<16> o8;   // (int<16>)(bit<16>)u
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
        h.o.o1 = (bit<16>)h.i.u;
        h.o.o2 = (bit<16>)(int<16>)h.i.s;
        h.o.o3 = (bit<8>)(bit<4>)h.i.w;
        h.o.o4 = (int<8>)(int<4>)(bit<4>)h.i.u;
        h.o.o5 = (bit<32>)(int<32>)(int<16>)h.i.w;
        h.o.o6 = (bit<8>)(h.i.w >> 4);
        h.o.o7 = (bit<8>)(bit<1>)(h.i.u > 0x7f);
        h.o.o8 = (int<16>)(bit<16>)h.i.u;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.i); pkt.emit(h.o); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
