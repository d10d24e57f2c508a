#include <core.p4>
#include <v1model.p4>

// An L2 switch that floods unknown destinations through a multicast group (p4lang tutorials
// "multicast" shape). Egress drops the copy that would go back out of the ingress port and
// tags each copy with its replication id.
header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header tag_t {
    bit<16> rid;
    bit<8>  port;
}

struct metadata { }

struct headers {
    ethernet_t ethernet;
    tag_t      tag;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.tag);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    action flood() {
        standard_metadata.mcast_grp = 1;
    }
    table mac_lookup {
        key = { hdr.ethernet.dstAddr : exact; }
        actions = { forward; flood; }
        default_action = flood();
    }
    apply {
        mac_lookup.apply();
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }
    apply {
        if (standard_metadata.egress_port == standard_metadata.ingress_port) {
            drop();
        }
        hdr.tag.rid = standard_metadata.egress_rid;
        hdr.tag.port = (bit<8>)standard_metadata.egress_port;
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.tag);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
