#include <core.p4>
#include <v1model.p4>

// standard_metadata seen by the program: ingress_port, packet_length (bytes received),
// instance_type 0 for a normal packet, and egress_port in egress.
header h_t { bit<8> iport; bit<16> plen; bit<8> itype; bit<8> eport; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = sm.ingress_port + 1;
        h.h.iport = (bit<8>)sm.ingress_port;
        h.h.plen = (bit<16>)sm.packet_length;
        h.h.itype = (bit<8>)sm.instance_type;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply { h.h.eport = (bit<8>)sm.egress_port; }
}
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
