#include <core.p4>
#include <v1model.p4>

// Stack elements extracted by constant index; a stack emitted between other headers;
// invalid elements are skipped by emit; element arithmetic by constant index.
header a_t { bit<8> op; }
header e_t { bit<8> v; }
header b_t { bit<16> b; }
struct headers_t { a_t a; e_t[3] s; b_t b; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.a);
        pkt.extract(h.s[0]);
        pkt.extract(h.s[1]);
        pkt.extract(h.s[2]);
        pkt.extract(h.b);
        transition accept;
    }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.a.op == 1) {
            h.s[1].setInvalid();
        } else if (h.a.op == 2) {
            h.s[0].setInvalid();
            h.s[2].setInvalid();
        } else if (h.a.op == 3) {
            h.s[2].v = h.s[0].v + h.s[1].v;
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.b); pkt.emit(h.s); pkt.emit(h.a); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
