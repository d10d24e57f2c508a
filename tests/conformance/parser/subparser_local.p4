#include <core.p4>
#include <v1model.p4>

// A parser's local variable as the out argument of a sub-parser (and as an inout one),
// then used in the caller's select.
header a_t {
    bit<8> kind;
    bit<8> v;
}
header b_t { bit<8> x; }
struct headers_t {
    a_t a;
    b_t b;
}
struct meta_t { bit<8> seen; }

parser Sub(packet_in pkt, inout headers_t h, out bit<8> next, inout bit<8> count) {
    state start {
        pkt.extract(h.a);
        next = h.a.kind;
        count = count + 1;
        transition accept;
    }
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    Sub() sub;
    bit<8> nxt;
    bit<8> n = 0x40;
    state start {
        sub.apply(pkt, h, nxt, n);
        m.seen = n;
        transition select(nxt) {
            1: parse_b;
            default: accept;
        }
    }
    state parse_b {
        pkt.extract(h.b);
        transition accept;
    }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.a.v = m.seen;
        if (h.b.isValid()) { h.b.x = h.b.x + 1; }
        sm.egress_spec = 1;
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.a); pkt.emit(h.b); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
