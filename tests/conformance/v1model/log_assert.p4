#include <core.p4>
#include <v1model.p4>

// log_msg (plain and with data), assert and assume with true conditions: no effect on the
// packet; processing continues.
header h_t { bit<8> x; bit<8> y; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        assert(sm.egress_spec == 0);
        log_msg("ingress");
        log_msg("x = {} y = {}", { h.h.x, h.h.y });
        assume(h.h.x == h.h.x);
        sm.egress_spec = 1;
        h.h.y = h.h.x + 1;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
