#include <core.p4>
#include <v1model.p4>

/* lookahead of a header with no fields reads no bytes and returns a valid header (split from
 * empty_header.p4, which BMv2 confirms: p4c 1.2.5.16 stops on this one with "Compiler Bug:
 * bit<0>: unknown width"). The marker byte m records what ingress saw. */

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header e_t { }
header m_t { bit<8> seen; }

struct metadata { }
struct headers { ethernet_t ethernet; e_t e; e_t peek; m_t m; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x88b5: parse_e; default: accept; }
    }
    state parse_e {
        hdr.peek = packet.lookahead<e_t>();
        packet.extract(hdr.e);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.m.setValid();
        hdr.m.seen = 0;
        if (hdr.e.isValid()) { hdr.m.seen = hdr.m.seen | 1; }
        if (hdr.peek.isValid()) { hdr.m.seen = hdr.m.seen | 2; }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.e); packet.emit(hdr.m); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
