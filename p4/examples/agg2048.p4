#include <core.p4>
#include <v1model.p4>

// agg64 (p4/examples/agg64.p4) at jumbo size: a UDP packet to AGG_PORT carries a slot index
// and 2048 bit<32> values (8 KiB: a frame of a 9000-byte MTU). For every i, ingress adds
// value i into register array r<i> at the slot index and writes the running sum back into
// the packet, which is returned to the ingress port (Ethernet and IPv4 addresses and UDP
// ports swapped, UDP checksum cleared). Other packets are dropped. Per-element fields, registers and statements are pasted by
// INNET_FOR_EACH (innet's repeat macros), so the program reaches the executor as 2048
// separate register arrays and 2048 statement groups, as p4/innet.p4 does at INNET_K=2048.
const bit<16> TYPE_IPV4 = 0x0800;
const bit<8>  PROTO_UDP = 17;
const bit<16> AGG_PORT  = 0x5555;
#define NUM_SLOTS 1024
#define INNET_K 2048
#include "../innet/repeat.p4"
#define AGG_VALUE_FIELD(i) bit<32> v##i;
#define AGG_REGISTER(i) register<bit<32>>(NUM_SLOTS) r##i;
#define AGG_ADD(i) r##i.read(s, idx); s = s + hdr.data.v##i; r##i.write(idx, s); hdr.data.v##i = s;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length_;
    bit<16> checksum;
}

header agg_t {
    bit<32> slot;
}

header data_t {
    INNET_FOR_EACH(AGG_VALUE_FIELD)
}

struct metadata { }

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
    agg_t      agg;
    data_t     data;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            PROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            AGG_PORT: parse_agg;
            default: accept;
        }
    }
    state parse_agg {
        packet.extract(hdr.agg);
        packet.extract(hdr.data);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    INNET_FOR_EACH(AGG_REGISTER)

    action return_to_sender() {
        standard_metadata.egress_spec = standard_metadata.ingress_port;
        bit<48> mac = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = mac;
        bit<32> ip = hdr.ipv4.dstAddr;
        hdr.ipv4.dstAddr = hdr.ipv4.srcAddr;
        hdr.ipv4.srcAddr = ip;
        bit<16> port = hdr.udp.dstPort;
        hdr.udp.dstPort = hdr.udp.srcPort;
        hdr.udp.srcPort = port;
        hdr.udp.checksum = 0;
    }

    apply {
        if (hdr.data.isValid()) {
            bit<32> idx = hdr.agg.slot;
            bit<32> s;
            INNET_FOR_EACH(AGG_ADD)
            return_to_sender();
        } else {
            mark_to_drop(standard_metadata);
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.agg);
        packet.emit(hdr.data);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
