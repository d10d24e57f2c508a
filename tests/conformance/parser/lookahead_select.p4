#include <core.p4>
#include <v1model.p4>

// lookahead<bit<4>>() (not byte aligned) and lookahead<tag_t>() of a header; the parser
// selects on a field of the looked-ahead header before extracting anything.
header tag_t { bit<4> kind; bit<4> len; bit<8> x; }
header c_t   { bit<16> v; }
header o_t   { bit<8> k4; bit<8> tagx; bit<8> path; }
struct headers_t { o_t o; tag_t tag; c_t c; }
struct meta_t { bit<8> k4; bit<8> tagx; bit<8> path; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        m.k4 = (bit<8>)pkt.lookahead<bit<4>>();
        tag_t t = pkt.lookahead<tag_t>();
        m.tagx = t.x;
        transition select(t.kind) {
            1: p_tag;
            2: p_c;
            default: accept;
        }
    }
    state p_tag { pkt.extract(h.tag); m.path = 1; transition accept; }
    state p_c   { pkt.extract(h.c); m.path = 2; transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        h.o.k4 = m.k4;
        h.o.tagx = m.tagx;
        h.o.path = m.path;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.o); pkt.emit(h.tag); pkt.emit(h.c); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
