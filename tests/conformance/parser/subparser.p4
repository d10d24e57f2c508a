#include <core.p4>
#include <v1model.p4>

// A sub-parser with its own states (including advance) instantiated twice inside the main
// parser. Headers come back through an `out` parameter, metadata through `inout`.
header a_t     { bit<8> n; }
header inner_t { bit<8> kind; bit<8> val; }
header o_t     { bit<8> calls; bit<8> valid; bit<8> err; }
struct headers_t { o_t o; a_t a; inner_t i1; inner_t i2; }
struct meta_t { bit<8> calls; }

parser Sub(packet_in pkt, out inner_t ih, inout meta_t m) {
    state start {
        pkt.extract(ih);
        m.calls = m.calls + 1;
        transition select(ih.kind) {
            0xff: skip;              // kind 0xff: one padding byte follows
            default: accept;
        }
    }
    state skip { pkt.advance(8); transition accept; }
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    Sub() sub1;
    Sub() sub2;
    state start {
        pkt.extract(h.a);
        transition select(h.a.n) { 1: one; 2: two; default: accept; }
    }
    state one { sub1.apply(pkt, h.i1, m); transition accept; }
    state two { sub1.apply(pkt, h.i1, m); transition second; }
    state second { sub2.apply(pkt, h.i2, m); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        h.o.calls = m.calls;
        h.o.valid = (h.i1.isValid() ? 8w1 : 8w0) | (h.i2.isValid() ? 8w2 : 8w0);
        h.o.err = (sm.parser_error == error.PacketTooShort) ? 8w1 : 8w0;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) {
    apply { pkt.emit(h.o); pkt.emit(h.a); pkt.emit(h.i1); pkt.emit(h.i2); }
}

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
