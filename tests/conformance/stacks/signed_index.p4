#include <core.p4>
#include <v1model.p4>

// A run-time stack index of a signed type (int<8>), as an l-value and as an r-value, and an
// index computed by signed arithmetic. Negative values are guarded by the program itself:
// an out-of-range index has no defined result.
header h_t { int<8> i; bit<8> v; bit<8> got; }
header s_t { bit<8> x; }
struct headers_t { h_t h; s_t[3] s; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.h);
        pkt.extract(h.s.next); pkt.extract(h.s.next); pkt.extract(h.s.next);
        transition accept;
    }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.h.i >= 0 && h.h.i < 3) {
            h.s[h.h.i].x = h.h.v;
        }
        if (h.h.i >= 1 && h.h.i < 4) {
            h.h.got = h.s[h.h.i - 1].x;
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); pkt.emit(h.s); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
