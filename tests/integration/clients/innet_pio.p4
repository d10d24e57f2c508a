// Small v1model program for the P4Runtime integration tests: L2 forwarding by an exact
// table, a register and a counter indexed by ingress port, and packet I/O through
// @controller_header headers on CPU port 255.
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> _pad; }
@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> _pad; }
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct headers { packet_out_t packet_out; packet_in_t packet_in; ethernet_t ethernet; }
struct metadata { }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) { CPU_PORT: parse_packet_out; default: parse_ethernet; }
    }
    state parse_packet_out { packet.extract(hdr.packet_out); transition parse_ethernet; }
    state parse_ethernet { packet.extract(hdr.ethernet); transition accept; }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    register<bit<32>>(8) seen;
    counter(8, CounterType.packets_and_bytes) port_packets;
    action drop() { mark_to_drop(sm); }
    action forward(bit<9> port) { sm.egress_spec = port; }
    action to_cpu() { sm.egress_spec = CPU_PORT; }
    table dmac {
        key = { hdr.ethernet.dstAddr: exact; }
        actions = { forward; to_cpu; drop; NoAction; }
        default_action = drop();
        size = 64;
    }
    apply {
        port_packets.count((bit<32>) sm.ingress_port);
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            bit<32> n;
            seen.read(n, (bit<32>) sm.ingress_port);
            seen.write((bit<32>) sm.ingress_port, n + 1);
            dmac.apply();
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.packet_in); packet.emit(hdr.ethernet); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
