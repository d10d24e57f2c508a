#include <core.p4>
#include <v1model.p4>

// resubmit_preserving_field_list: a preserved metadata field steers the second pass to a
// different port. The header change of the first pass is lost (the received packet is
// resubmitted), instance_type is 6. The first pass produces no output. ingress_port reads 0
// in the second pass: simple_switch resets every metadata field of a resubmitted packet
// (standard_metadata included) before it copies the field list in (BMv2 1.15.5 confirms).
header h_t { bit<8> x; bit<8> seen; bit<8> itype; bit<8> port; }
struct headers_t { h_t h; }
struct meta_t { @field_list(1) bit<8> pass; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (m.pass == 0) {
            m.pass = 1;
            h.h.x = 0xff;
            sm.egress_spec = 1;
            resubmit_preserving_field_list(1);
        } else {
            sm.egress_spec = 2;
            h.h.seen = m.pass;
            h.h.itype = (bit<8>)sm.instance_type;
            h.h.port = (bit<8>)sm.ingress_port;
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
