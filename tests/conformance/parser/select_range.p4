#include <core.p4>
#include <v1model.p4>

// select with lo .. hi keysets (inclusive bounds), an exact value and default.
header h_t { bit<8> a; bit<16> b; bit<8> path; }
struct headers_t { h_t h; }
struct meta_t { bit<8> path; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.h);
        transition select(h.h.a) {
            8w0 .. 8w9: lo;
            8w10 .. 8w0x1f: mid;
            8w0x20: exact;
            default: wide;
        }
    }
    state lo { m.path = 1; transition accept; }
    state mid { m.path = 2; transition accept; }
    state exact { m.path = 3; transition accept; }
    state wide {
        m.path = 4;
        transition select(h.h.b) {
            16w1000 .. 16w2000: in16;
            default: accept;
        }
    }
    state in16 { m.path = 5; transition accept; }
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
