#include <core.p4>
#include <v1model.p4>

// Struct values: initialisation from a structure expression, copy (independent of the
// source), struct == / != and header == (same validity and same field values).
header p_t { bit<8> a; bit<8> b; }
header o_t { bit<8> qx; bit<8> px; bit<8> eq; }
struct pair_t { bit<8> x; bit<8> y; }
struct headers_t { p_t h1; p_t h2; o_t o; }
struct meta_t { pair_t p; pair_t q; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h1); pkt.extract(h.h2); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        m.p = { x = h.h1.a, y = h.h1.b };
        m.q = m.p;
        if (h.h1.a != 0) { m.q.x = m.q.x + 1; }
        h.o.setValid();
        h.o.qx = m.q.x;
        h.o.px = m.p.x;
        h.o.eq = 0;
        if (m.p == m.q) { h.o.eq = h.o.eq | 1; }
        if (m.p != m.q) { h.o.eq = h.o.eq | 2; }
        if (h.h1 == h.h2) { h.o.eq = h.o.eq | 4; }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h1); pkt.emit(h.h2); pkt.emit(h.o); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
