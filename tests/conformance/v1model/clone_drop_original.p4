#include <core.p4>
#include <v1model.p4>

// An I2E clone is still made when the original packet is dropped by mark_to_drop.
// An E2E clone is made even when egress drops the original.
header h_t { bit<8> op; bit<8> itype; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.h.op == 1) {
            clone(CloneType.I2E, 32w4);
            mark_to_drop(sm);
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.h.itype = (bit<8>)sm.instance_type;
        if (h.h.op == 2 && sm.instance_type == 0) {
            clone(CloneType.E2E, 32w4);
            mark_to_drop(sm);
        }
    }
}
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
