#include <core.p4>
#include <v1model.p4>

// Local variables in a parser state, arithmetic on extracted fields, and a select on
// slices of a local and of a field.
header h_t { bit<8> a; bit<8> b; }
header o_t { bit<8> sum; bit<8> path; }
struct headers_t { h_t h; o_t o; }
struct meta_t { bit<8> sum; bit<8> path; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.h);
        bit<8> sum = h.h.a + h.h.b;
        m.sum = sum;
        transition select(sum[7:7], h.h.a[0:0]) {
            (1, _): big;
            (0, 1): odd;
            default: accept;
        }
    }
    state big { m.path = 1; transition accept; }
    state odd { m.path = 2; transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        h.o.sum = m.sum;
        h.o.path = m.path;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); pkt.emit(h.o); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
