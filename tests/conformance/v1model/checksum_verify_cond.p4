#include <core.p4>
#include <v1model.p4>

// verify_checksum with a runtime condition: when the condition is false the checksum is not
// checked (checksum_error stays 0); when true a wrong checksum sets checksum_error = 1.
header d_t { bit<16> a; bit<16> b; bit<16> ck; bit<8> mode; bit<8> err; }
struct headers_t { d_t d; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.d); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) {
    apply {
        verify_checksum(h.d.mode == 1, { h.d.a, h.d.b }, h.d.ck, HashAlgorithm.csum16);
    }
}
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.d.err = (bit<8>)sm.checksum_error;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.d); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
