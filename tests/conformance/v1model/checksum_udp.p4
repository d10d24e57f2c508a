#include <core.p4>
#include <v1model.p4>

// update_checksum_with_payload: a UDP-style checksum over pseudo-header fields, the UDP
// header fields and the payload (the bytes the parser did not extract), recomputed after
// ingress changes dport.
header ip_t  { bit<32> src; bit<32> dst; bit<8> proto; }
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
struct headers_t { ip_t ip; udp_t udp; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.ip); pkt.extract(h.udp); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.udp.dport = h.udp.dport + 1;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) {
    apply {
        update_checksum_with_payload(h.udp.isValid(),
            { h.ip.src, h.ip.dst, 8w0, h.ip.proto, h.udp.len, h.udp.sport, h.udp.dport, h.udp.len },
            h.udp.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.ip); pkt.emit(h.udp); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
