#include <core.p4>
#include <v1model.p4>

// In-network aggregation benchmark program. A UDP packet to AGG_PORT carries a slot index
// and 64 bit<32> values. For every i, ingress adds value i into register array r<i> at the
// slot index and writes the running sum back into the packet, which is returned to the
// ingress port (Ethernet and IPv4 addresses and UDP ports swapped, UDP checksum cleared).
// Other packets are dropped.
const bit<16> TYPE_IPV4 = 0x0800;
const bit<8>  PROTO_UDP = 17;
const bit<16> AGG_PORT  = 0x5555;
#define NUM_SLOTS 1024

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
    bit<32> v00;
    bit<32> v01;
    bit<32> v02;
    bit<32> v03;
    bit<32> v04;
    bit<32> v05;
    bit<32> v06;
    bit<32> v07;
    bit<32> v08;
    bit<32> v09;
    bit<32> v10;
    bit<32> v11;
    bit<32> v12;
    bit<32> v13;
    bit<32> v14;
    bit<32> v15;
    bit<32> v16;
    bit<32> v17;
    bit<32> v18;
    bit<32> v19;
    bit<32> v20;
    bit<32> v21;
    bit<32> v22;
    bit<32> v23;
    bit<32> v24;
    bit<32> v25;
    bit<32> v26;
    bit<32> v27;
    bit<32> v28;
    bit<32> v29;
    bit<32> v30;
    bit<32> v31;
    bit<32> v32;
    bit<32> v33;
    bit<32> v34;
    bit<32> v35;
    bit<32> v36;
    bit<32> v37;
    bit<32> v38;
    bit<32> v39;
    bit<32> v40;
    bit<32> v41;
    bit<32> v42;
    bit<32> v43;
    bit<32> v44;
    bit<32> v45;
    bit<32> v46;
    bit<32> v47;
    bit<32> v48;
    bit<32> v49;
    bit<32> v50;
    bit<32> v51;
    bit<32> v52;
    bit<32> v53;
    bit<32> v54;
    bit<32> v55;
    bit<32> v56;
    bit<32> v57;
    bit<32> v58;
    bit<32> v59;
    bit<32> v60;
    bit<32> v61;
    bit<32> v62;
    bit<32> v63;
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
    register<bit<32>>(NUM_SLOTS) r00;
    register<bit<32>>(NUM_SLOTS) r01;
    register<bit<32>>(NUM_SLOTS) r02;
    register<bit<32>>(NUM_SLOTS) r03;
    register<bit<32>>(NUM_SLOTS) r04;
    register<bit<32>>(NUM_SLOTS) r05;
    register<bit<32>>(NUM_SLOTS) r06;
    register<bit<32>>(NUM_SLOTS) r07;
    register<bit<32>>(NUM_SLOTS) r08;
    register<bit<32>>(NUM_SLOTS) r09;
    register<bit<32>>(NUM_SLOTS) r10;
    register<bit<32>>(NUM_SLOTS) r11;
    register<bit<32>>(NUM_SLOTS) r12;
    register<bit<32>>(NUM_SLOTS) r13;
    register<bit<32>>(NUM_SLOTS) r14;
    register<bit<32>>(NUM_SLOTS) r15;
    register<bit<32>>(NUM_SLOTS) r16;
    register<bit<32>>(NUM_SLOTS) r17;
    register<bit<32>>(NUM_SLOTS) r18;
    register<bit<32>>(NUM_SLOTS) r19;
    register<bit<32>>(NUM_SLOTS) r20;
    register<bit<32>>(NUM_SLOTS) r21;
    register<bit<32>>(NUM_SLOTS) r22;
    register<bit<32>>(NUM_SLOTS) r23;
    register<bit<32>>(NUM_SLOTS) r24;
    register<bit<32>>(NUM_SLOTS) r25;
    register<bit<32>>(NUM_SLOTS) r26;
    register<bit<32>>(NUM_SLOTS) r27;
    register<bit<32>>(NUM_SLOTS) r28;
    register<bit<32>>(NUM_SLOTS) r29;
    register<bit<32>>(NUM_SLOTS) r30;
    register<bit<32>>(NUM_SLOTS) r31;
    register<bit<32>>(NUM_SLOTS) r32;
    register<bit<32>>(NUM_SLOTS) r33;
    register<bit<32>>(NUM_SLOTS) r34;
    register<bit<32>>(NUM_SLOTS) r35;
    register<bit<32>>(NUM_SLOTS) r36;
    register<bit<32>>(NUM_SLOTS) r37;
    register<bit<32>>(NUM_SLOTS) r38;
    register<bit<32>>(NUM_SLOTS) r39;
    register<bit<32>>(NUM_SLOTS) r40;
    register<bit<32>>(NUM_SLOTS) r41;
    register<bit<32>>(NUM_SLOTS) r42;
    register<bit<32>>(NUM_SLOTS) r43;
    register<bit<32>>(NUM_SLOTS) r44;
    register<bit<32>>(NUM_SLOTS) r45;
    register<bit<32>>(NUM_SLOTS) r46;
    register<bit<32>>(NUM_SLOTS) r47;
    register<bit<32>>(NUM_SLOTS) r48;
    register<bit<32>>(NUM_SLOTS) r49;
    register<bit<32>>(NUM_SLOTS) r50;
    register<bit<32>>(NUM_SLOTS) r51;
    register<bit<32>>(NUM_SLOTS) r52;
    register<bit<32>>(NUM_SLOTS) r53;
    register<bit<32>>(NUM_SLOTS) r54;
    register<bit<32>>(NUM_SLOTS) r55;
    register<bit<32>>(NUM_SLOTS) r56;
    register<bit<32>>(NUM_SLOTS) r57;
    register<bit<32>>(NUM_SLOTS) r58;
    register<bit<32>>(NUM_SLOTS) r59;
    register<bit<32>>(NUM_SLOTS) r60;
    register<bit<32>>(NUM_SLOTS) r61;
    register<bit<32>>(NUM_SLOTS) r62;
    register<bit<32>>(NUM_SLOTS) r63;

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
            r00.read(s, idx); s = s + hdr.data.v00; r00.write(idx, s); hdr.data.v00 = s;
            r01.read(s, idx); s = s + hdr.data.v01; r01.write(idx, s); hdr.data.v01 = s;
            r02.read(s, idx); s = s + hdr.data.v02; r02.write(idx, s); hdr.data.v02 = s;
            r03.read(s, idx); s = s + hdr.data.v03; r03.write(idx, s); hdr.data.v03 = s;
            r04.read(s, idx); s = s + hdr.data.v04; r04.write(idx, s); hdr.data.v04 = s;
            r05.read(s, idx); s = s + hdr.data.v05; r05.write(idx, s); hdr.data.v05 = s;
            r06.read(s, idx); s = s + hdr.data.v06; r06.write(idx, s); hdr.data.v06 = s;
            r07.read(s, idx); s = s + hdr.data.v07; r07.write(idx, s); hdr.data.v07 = s;
            r08.read(s, idx); s = s + hdr.data.v08; r08.write(idx, s); hdr.data.v08 = s;
            r09.read(s, idx); s = s + hdr.data.v09; r09.write(idx, s); hdr.data.v09 = s;
            r10.read(s, idx); s = s + hdr.data.v10; r10.write(idx, s); hdr.data.v10 = s;
            r11.read(s, idx); s = s + hdr.data.v11; r11.write(idx, s); hdr.data.v11 = s;
            r12.read(s, idx); s = s + hdr.data.v12; r12.write(idx, s); hdr.data.v12 = s;
            r13.read(s, idx); s = s + hdr.data.v13; r13.write(idx, s); hdr.data.v13 = s;
            r14.read(s, idx); s = s + hdr.data.v14; r14.write(idx, s); hdr.data.v14 = s;
            r15.read(s, idx); s = s + hdr.data.v15; r15.write(idx, s); hdr.data.v15 = s;
            r16.read(s, idx); s = s + hdr.data.v16; r16.write(idx, s); hdr.data.v16 = s;
            r17.read(s, idx); s = s + hdr.data.v17; r17.write(idx, s); hdr.data.v17 = s;
            r18.read(s, idx); s = s + hdr.data.v18; r18.write(idx, s); hdr.data.v18 = s;
            r19.read(s, idx); s = s + hdr.data.v19; r19.write(idx, s); hdr.data.v19 = s;
            r20.read(s, idx); s = s + hdr.data.v20; r20.write(idx, s); hdr.data.v20 = s;
            r21.read(s, idx); s = s + hdr.data.v21; r21.write(idx, s); hdr.data.v21 = s;
            r22.read(s, idx); s = s + hdr.data.v22; r22.write(idx, s); hdr.data.v22 = s;
            r23.read(s, idx); s = s + hdr.data.v23; r23.write(idx, s); hdr.data.v23 = s;
            r24.read(s, idx); s = s + hdr.data.v24; r24.write(idx, s); hdr.data.v24 = s;
            r25.read(s, idx); s = s + hdr.data.v25; r25.write(idx, s); hdr.data.v25 = s;
            r26.read(s, idx); s = s + hdr.data.v26; r26.write(idx, s); hdr.data.v26 = s;
            r27.read(s, idx); s = s + hdr.data.v27; r27.write(idx, s); hdr.data.v27 = s;
            r28.read(s, idx); s = s + hdr.data.v28; r28.write(idx, s); hdr.data.v28 = s;
            r29.read(s, idx); s = s + hdr.data.v29; r29.write(idx, s); hdr.data.v29 = s;
            r30.read(s, idx); s = s + hdr.data.v30; r30.write(idx, s); hdr.data.v30 = s;
            r31.read(s, idx); s = s + hdr.data.v31; r31.write(idx, s); hdr.data.v31 = s;
            r32.read(s, idx); s = s + hdr.data.v32; r32.write(idx, s); hdr.data.v32 = s;
            r33.read(s, idx); s = s + hdr.data.v33; r33.write(idx, s); hdr.data.v33 = s;
            r34.read(s, idx); s = s + hdr.data.v34; r34.write(idx, s); hdr.data.v34 = s;
            r35.read(s, idx); s = s + hdr.data.v35; r35.write(idx, s); hdr.data.v35 = s;
            r36.read(s, idx); s = s + hdr.data.v36; r36.write(idx, s); hdr.data.v36 = s;
            r37.read(s, idx); s = s + hdr.data.v37; r37.write(idx, s); hdr.data.v37 = s;
            r38.read(s, idx); s = s + hdr.data.v38; r38.write(idx, s); hdr.data.v38 = s;
            r39.read(s, idx); s = s + hdr.data.v39; r39.write(idx, s); hdr.data.v39 = s;
            r40.read(s, idx); s = s + hdr.data.v40; r40.write(idx, s); hdr.data.v40 = s;
            r41.read(s, idx); s = s + hdr.data.v41; r41.write(idx, s); hdr.data.v41 = s;
            r42.read(s, idx); s = s + hdr.data.v42; r42.write(idx, s); hdr.data.v42 = s;
            r43.read(s, idx); s = s + hdr.data.v43; r43.write(idx, s); hdr.data.v43 = s;
            r44.read(s, idx); s = s + hdr.data.v44; r44.write(idx, s); hdr.data.v44 = s;
            r45.read(s, idx); s = s + hdr.data.v45; r45.write(idx, s); hdr.data.v45 = s;
            r46.read(s, idx); s = s + hdr.data.v46; r46.write(idx, s); hdr.data.v46 = s;
            r47.read(s, idx); s = s + hdr.data.v47; r47.write(idx, s); hdr.data.v47 = s;
            r48.read(s, idx); s = s + hdr.data.v48; r48.write(idx, s); hdr.data.v48 = s;
            r49.read(s, idx); s = s + hdr.data.v49; r49.write(idx, s); hdr.data.v49 = s;
            r50.read(s, idx); s = s + hdr.data.v50; r50.write(idx, s); hdr.data.v50 = s;
            r51.read(s, idx); s = s + hdr.data.v51; r51.write(idx, s); hdr.data.v51 = s;
            r52.read(s, idx); s = s + hdr.data.v52; r52.write(idx, s); hdr.data.v52 = s;
            r53.read(s, idx); s = s + hdr.data.v53; r53.write(idx, s); hdr.data.v53 = s;
            r54.read(s, idx); s = s + hdr.data.v54; r54.write(idx, s); hdr.data.v54 = s;
            r55.read(s, idx); s = s + hdr.data.v55; r55.write(idx, s); hdr.data.v55 = s;
            r56.read(s, idx); s = s + hdr.data.v56; r56.write(idx, s); hdr.data.v56 = s;
            r57.read(s, idx); s = s + hdr.data.v57; r57.write(idx, s); hdr.data.v57 = s;
            r58.read(s, idx); s = s + hdr.data.v58; r58.write(idx, s); hdr.data.v58 = s;
            r59.read(s, idx); s = s + hdr.data.v59; r59.write(idx, s); hdr.data.v59 = s;
            r60.read(s, idx); s = s + hdr.data.v60; r60.write(idx, s); hdr.data.v60 = s;
            r61.read(s, idx); s = s + hdr.data.v61; r61.write(idx, s); hdr.data.v61 = s;
            r62.read(s, idx); s = s + hdr.data.v62; r62.write(idx, s); hdr.data.v62 = s;
            r63.read(s, idx); s = s + hdr.data.v63; r63.write(idx, s); hdr.data.v63 = s;
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
