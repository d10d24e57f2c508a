#include <core.p4>
#include <v1model.p4>

// A header union with three members of different sizes; only the parsed member is valid and
// emitted; isValid() on the union and on each member; a field of the valid member is updated.
header sel_t { bit<8> t; }
header a_t   { bit<8> a; }
header b_t   { bit<16> b; }
header c_t   { bit<24> c; }
header_union u_t { a_t a; b_t b; c_t c; }
header o_t   { bit<8> which; bit<8> any; }
struct headers_t { sel_t sel; o_t o; u_t u; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.sel);
        transition select(h.sel.t) { 1: pa; 2: pb; 3: pc; default: accept; }
    }
    state pa { pkt.extract(h.u.a); transition accept; }
    state pb { pkt.extract(h.u.b); transition accept; }
    state pc { pkt.extract(h.u.c); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        if (h.u.a.isValid()) { h.o.which = 1; }
        else if (h.u.b.isValid()) { h.o.which = 2; h.u.b.b = h.u.b.b + 1; }
        else if (h.u.c.isValid()) { h.o.which = 3; }
        else { h.o.which = 0; }
        h.o.any = h.u.isValid() ? 8w1 : 8w0;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.sel); pkt.emit(h.o); pkt.emit(h.u); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
