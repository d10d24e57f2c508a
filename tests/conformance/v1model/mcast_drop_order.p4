#include <core.p4>
#include <v1model.p4>

// End-of-ingress order: a non-zero mcast_grp wins over egress_spec (including the drop
// value set by mark_to_drop); mark_to_drop also clears mcast_grp.
header h_t { bit<8> op; bit<16> rid; bit<8> port; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (h.h.op == 0) {
            sm.egress_spec = 2;
        } else if (h.h.op == 1) {
            mark_to_drop(sm);
            sm.mcast_grp = 1;           // multicast despite egress_spec == 511
        } else if (h.h.op == 2) {
            sm.mcast_grp = 1;
            mark_to_drop(sm);           // clears mcast_grp: dropped
        } else if (h.h.op == 3) {
            sm.egress_spec = 2;
            sm.mcast_grp = 1;           // multicast only, no unicast copy to port 2
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.h.rid = sm.egress_rid;
        h.h.port = (bit<8>)sm.egress_port;
    }
}
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
