#include <core.p4>
#include <v1model.p4>

// lookahead<H>() used as a value: a field of it drives a select, another field is stored in
// metadata, and lookahead of a struct as a statement only checks that enough bytes remain
// (PacketTooShort otherwise). Nothing is consumed: unparsed bytes stay payload.
header h_t { bit<4> ver; bit<4> ihl; bit<8> x; }
header r_t { bit<8> kind; bit<8> x; bit<8> err; }
struct peek_t { bit<16> w; }
struct headers_t { r_t r; h_t h; }
struct meta_t { bit<8> kind; bit<8> x; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.lookahead<peek_t>();
        transition select(pkt.lookahead<h_t>().ihl) {
            5: five;
            default: other;
        }
    }
    state five { pkt.extract(h.h); m.kind = 5; transition accept; }
    state other { m.kind = 1; m.x = pkt.lookahead<h_t>().x; transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.r.setValid();
        h.r.kind = m.kind;
        h.r.x = m.x;
        h.r.err = (sm.parser_error == error.NoError) ? 8w0 : 8w1;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.r); pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
