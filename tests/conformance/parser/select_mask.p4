#include <core.p4>
#include <v1model.p4>

// select with value &&& mask keysets, alone and inside a tuple; cases are tried in order.
header h_t { bit<8> a; bit<8> b; bit<8> path; }
struct headers_t { h_t h; }
struct meta_t { bit<8> path; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.h);
        transition select(h.h.a) {
            8w0x10 &&& 8w0xf0: s_hi;     // high nibble 1
            8w0x03 &&& 8w0x0f: s_lo;     // low nibble 3
            default: s_tuple;
        }
    }
    state s_hi { m.path = 1; transition accept; }
    state s_lo { m.path = 2; transition accept; }
    state s_tuple {
        m.path = 3;
        transition select(h.h.a, h.h.b) {
            (8w0x80 &&& 8w0x80, 8w0x01 &&& 8w0x01): s_both;   // a bit 7 set and b bit 0 set
            (_, 8w0x00 &&& 8w0x00): accept;                  // a zero mask matches anything
        }
    }
    state s_both { m.path = 4; transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.h.path = m.path;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
