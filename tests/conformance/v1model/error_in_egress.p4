#include <core.p4>
#include <v1model.p4>

// parser_error is part of standard_metadata and is still visible in egress.
header a_t { bit<8> a; }
header b_t { bit<16> b; }
header o_t { bit<8> ing; bit<8> egr; }
struct headers_t { o_t o; a_t a; b_t b; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.a); pkt.extract(h.b); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        h.o.ing = (sm.parser_error == error.PacketTooShort) ? 8w1 : 8w0;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.o.egr = (sm.parser_error == error.PacketTooShort) ? 8w1 : 8w0;
    }
}
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.o); pkt.emit(h.a); pkt.emit(h.b); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
