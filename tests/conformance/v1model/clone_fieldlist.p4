#include <core.p4>
#include <v1model.p4>

// clone_preserving_field_list(I2E): the clone gets the received packet (parsed again) and
// only the metadata in the field list, with the value it has at the END of ingress (a write
// after the clone call is seen). Other metadata is 0 in the clone.
header h_t { bit<8> x; bit<8> keep; bit<8> lost; bit<8> itype; }
struct headers_t { h_t h; }
struct meta_t {
    @field_list(1) bit<8> keep;
    bit<8> lost;
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        m.keep = 0x41;
        m.lost = 0x99;
        clone_preserving_field_list(CloneType.I2E, 32w5, 1);
        m.keep = 0x42;
        h.h.x = 0x11;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.h.keep = m.keep;
        h.h.lost = m.lost;
        h.h.itype = (bit<8>)sm.instance_type;
    }
}
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
