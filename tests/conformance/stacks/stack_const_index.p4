#include <core.p4>
#include <v1model.p4>

// A stack built in the control by constant indexes (nothing parsed into it); the stack
// size property; fields written after setValid.
header in_t { bit<8> x; }
header o_t  { bit<8> size; }
header e_t  { bit<8> v; }
struct headers_t { o_t o; e_t[4] s; in_t i; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.i); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        h.o.size = (bit<8>)h.s.size;
        h.s[3].setValid();
        h.s[3].v = 0x33;
        h.s[1].setValid();
        h.s[1].v = h.i.x;
        if (h.i.x > 0x80) {
            h.s[0].setValid();
            h.s[0].v = 0x99;
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.o); pkt.emit(h.s); pkt.emit(h.i); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
