#include <core.p4>
#include <v1model.p4>

// Top-level functions: early return, a function calling a function, and a void function
// with out parameters.
bit<8> max8(in bit<8> a, in bit<8> b) {
    if (a > b) { return a; }
    return b;
}
bit<8> clamp(in bit<8> v, in bit<8> lo, in bit<8> hi) {
    bit<8> t = max8(lo, v);
    return t > hi ? hi : t;
}
void split(in bit<16> v, out bit<8> hi, out bit<8> lo) {
    hi = v[15:8];
    lo = v[7:0];
}

header h_t { bit<8> a; bit<8> b; bit<16> w; bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.h.r1 = max8(h.h.a, h.h.b);
        h.h.r2 = clamp(h.h.a, 0x10, 0x20);
        split(h.h.w, h.h.r3, h.h.r4);
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
