#include <core.p4>
#include <v1model.p4>

// Saturating |+| and |-| on bit<16> and int<16>, at both ends of the ranges.
header in_t  { bit<16> u1; bit<16> u2; int<16> s1; int<16> s2; }
header out_t { bit<16> au; bit<16> su; int<16> as; int<16> ss; }
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
        h.o.au = h.i.u1 |+| h.i.u2;
        h.o.su = h.i.u1 |-| h.i.u2;
        h.o.as = h.i.s1 |+| h.i.s2;
        h.o.ss = h.i.s1 |-| h.i.s2;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.i); pkt.emit(h.o); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
