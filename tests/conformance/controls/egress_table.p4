#include <core.p4>
#include <v1model.p4>

// A table applied in egress, keyed on a copy of egress_port. Writing egress_spec in egress
// does not change the output port.
header h_t { bit<8> port; bit<8> ep; bit<8> t; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = (bit<9>)h.h.port; }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action tag(bit<8> v) { h.h.t = v; sm.egress_spec = 3; }
    table et {
        key = { h.h.ep : exact; }
        actions = { tag; NoAction; }
        default_action = NoAction();
    }
    apply {
        h.h.ep = (bit<8>)sm.egress_port;
        et.apply();
    }
}
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
