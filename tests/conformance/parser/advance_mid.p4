#include <core.p4>
#include <v1model.p4>

// advance() between extracts: a constant advance and one by a byte count read from the
// packet. The skipped bytes are removed from the output packet.
header a_t { bit<8> n; }
header b_t { bit<16> b; }
header c_t { bit<8> c; }
struct headers_t { a_t a; b_t b; c_t c; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.a);
        pkt.advance((bit<32>)h.a.n << 3);
        pkt.extract(h.b);
        pkt.advance(16);
        pkt.extract(h.c);
        transition accept;
    }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.a); pkt.emit(h.b); pkt.emit(h.c); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
