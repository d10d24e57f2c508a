#include <core.p4>
#include <v1model.p4>

// @field_list with a named constant (p4c evaluates the annotation's expression) for an I2E
// clone, a resubmit and a recirculation. In each copy only the listed field survives, with
// its value at the end of the pass that asked for the copy. simple_switch resets all other
// metadata, standard_metadata included, so ingress_port reads 0 in every copy. A unicast
// packet enters egress with instance_type 0 (simple_switch resets it at the end of ingress),
// so the ingress pass records the type it saw in itype's low nibble and egress adds its own
// in the high nibble.
const bit<8> FL = 3;

header h_t { bit<8> mode; bit<8> keep; bit<8> lost; bit<8> itype; bit<8> port; }
struct headers_t { h_t h; }
struct meta_t {
    @field_list(FL) bit<8> keep;
    bit<8> lost;
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0) {
            m.keep = 0x40 + h.h.mode;
            m.lost = 0x99;
            sm.egress_spec = 1;
            if (h.h.mode == 1) {
                clone_preserving_field_list(CloneType.I2E, 5, FL);
                m.keep = 0x51;  // after the call: the clone still sees it
            } else if (h.h.mode == 2) {
                resubmit_preserving_field_list(FL);
                m.keep = 0x52;
            }
        } else {
            sm.egress_spec = (bit<9>)sm.instance_type;  // resubmit: 6, recirculation: 4
            h.h.itype = (bit<8>)sm.instance_type;
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0 && h.h.mode == 3 && h.h.itype == 0) {
            m.keep = 0x63;
            recirculate_preserving_field_list(FL);
        } else {
            h.h.keep = m.keep;
            h.h.lost = m.lost;
            h.h.itype = h.h.itype | ((bit<8>)sm.instance_type << 4);
            h.h.port = (bit<8>)sm.ingress_port;
        }
    }
}
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
