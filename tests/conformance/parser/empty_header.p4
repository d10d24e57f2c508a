#include <core.p4>
#include <v1model.p4>

/* A header with no fields (p4c accepts it): extracting it consumes no bytes and only
 * makes it valid; emitting it writes nothing. The marker byte m records what ingress saw.
 * (lookahead<e_t>() is in empty_lookahead.p4: p4c 1.2.5.16 cannot compile it for BMv2.) */

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header e_t { }
header m_t { bit<8> seen; }

struct metadata { }
struct headers { ethernet_t ethernet; e_t e; e_t copy; m_t m; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x88b5: parse_e; default: accept; }
    }
    state parse_e {
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
        hdr.copy = hdr.e;
        if (hdr.copy.isValid()) { hdr.m.seen = hdr.m.seen | 4; }
        hdr.e.setInvalid();
        if (!hdr.e.isValid()) { hdr.m.seen = hdr.m.seen | 8; }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.e); packet.emit(hdr.copy); packet.emit(hdr.m); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
