#include <core.p4>
#include <v1model.p4>

// Compound assignments (P4_16 1.2.4) 'a op= b' mean 'a = a op b' with the same wrapping and
// saturation as the operator, and the l-value evaluated once: a function call in a stack
// index runs once per statement.
header h_t { bit<8> a; bit<8> b; int<8> c; bit<8> d; bit<8> e; bit<8> f; bit<8> g; bit<8> i; }
header w_t { bit<8> x; }
struct headers_t { h_t h; w_t[4] s; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.h);
        pkt.extract(h.s.next); pkt.extract(h.s.next); pkt.extract(h.s.next); pkt.extract(h.s.next);
        transition accept;
    }
}
bit<8> take(inout bit<8> i) { bit<8> r = i; i = i + 1; return r; }

control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.h.a += 5;
        h.h.b -= 3;
        h.h.c |-|= 100;
        h.h.d <<= 2;
        h.h.e >>= 1;
        h.h.f ^= 0xff;
        h.h.g *= 3;
        h.s[take(h.h.i) & 3].x |= 0x80;
        h.s[take(h.h.i) & 3].x += 1;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); pkt.emit(h.s); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
