#include <core.p4>
#include <v1model.p4>

// select on a tuple of two fields; `_` wildcards inside the tuple; the first matching case wins.
header h_t { bit<8> a; bit<8> b; bit<8> path; }
struct headers_t { h_t h; }
struct meta_t { bit<8> path; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.h);
        transition select(h.h.a, h.h.b) {
            (1, 1): s11;
            (1, _): s1x;
            (_, 2): sx2;
            default: sdef;
        }
    }
    state s11 { m.path = 0x11; transition accept; }
    state s1x { m.path = 0x10; transition accept; }
    state sx2 { m.path = 0x02; transition accept; }
    state sdef { m.path = 0xdd; transition accept; }
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
