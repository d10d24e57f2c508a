/* Benchmark fallback copy: 64 bit<32> values added into 64 register arrays per packet. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header agg_t {
    bit<32> slot;
    bit<32> v0;
    bit<32> v1;
    bit<32> v2;
    bit<32> v3;
    bit<32> v4;
    bit<32> v5;
    bit<32> v6;
    bit<32> v7;
    bit<32> v8;
    bit<32> v9;
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
struct headers { ethernet_t ethernet; agg_t agg; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x88b5: parse_agg; default: accept; }
    }
    state parse_agg { packet.extract(hdr.agg); transition accept; }
}
control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    register<bit<32>>(1024) r0;
    register<bit<32>>(1024) r1;
    register<bit<32>>(1024) r2;
    register<bit<32>>(1024) r3;
    register<bit<32>>(1024) r4;
    register<bit<32>>(1024) r5;
    register<bit<32>>(1024) r6;
    register<bit<32>>(1024) r7;
    register<bit<32>>(1024) r8;
    register<bit<32>>(1024) r9;
    register<bit<32>>(1024) r10;
    register<bit<32>>(1024) r11;
    register<bit<32>>(1024) r12;
    register<bit<32>>(1024) r13;
    register<bit<32>>(1024) r14;
    register<bit<32>>(1024) r15;
    register<bit<32>>(1024) r16;
    register<bit<32>>(1024) r17;
    register<bit<32>>(1024) r18;
    register<bit<32>>(1024) r19;
    register<bit<32>>(1024) r20;
    register<bit<32>>(1024) r21;
    register<bit<32>>(1024) r22;
    register<bit<32>>(1024) r23;
    register<bit<32>>(1024) r24;
    register<bit<32>>(1024) r25;
    register<bit<32>>(1024) r26;
    register<bit<32>>(1024) r27;
    register<bit<32>>(1024) r28;
    register<bit<32>>(1024) r29;
    register<bit<32>>(1024) r30;
    register<bit<32>>(1024) r31;
    register<bit<32>>(1024) r32;
    register<bit<32>>(1024) r33;
    register<bit<32>>(1024) r34;
    register<bit<32>>(1024) r35;
    register<bit<32>>(1024) r36;
    register<bit<32>>(1024) r37;
    register<bit<32>>(1024) r38;
    register<bit<32>>(1024) r39;
    register<bit<32>>(1024) r40;
    register<bit<32>>(1024) r41;
    register<bit<32>>(1024) r42;
    register<bit<32>>(1024) r43;
    register<bit<32>>(1024) r44;
    register<bit<32>>(1024) r45;
    register<bit<32>>(1024) r46;
    register<bit<32>>(1024) r47;
    register<bit<32>>(1024) r48;
    register<bit<32>>(1024) r49;
    register<bit<32>>(1024) r50;
    register<bit<32>>(1024) r51;
    register<bit<32>>(1024) r52;
    register<bit<32>>(1024) r53;
    register<bit<32>>(1024) r54;
    register<bit<32>>(1024) r55;
    register<bit<32>>(1024) r56;
    register<bit<32>>(1024) r57;
    register<bit<32>>(1024) r58;
    register<bit<32>>(1024) r59;
    register<bit<32>>(1024) r60;
    register<bit<32>>(1024) r61;
    register<bit<32>>(1024) r62;
    register<bit<32>>(1024) r63;
    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.agg.isValid()) {
            bit<32> idx = hdr.agg.slot;
            bit<32> acc;
        r0.read(acc, idx); acc = acc + hdr.agg.v0; r0.write(idx, acc); hdr.agg.v0 = acc;
        r1.read(acc, idx); acc = acc + hdr.agg.v1; r1.write(idx, acc); hdr.agg.v1 = acc;
        r2.read(acc, idx); acc = acc + hdr.agg.v2; r2.write(idx, acc); hdr.agg.v2 = acc;
        r3.read(acc, idx); acc = acc + hdr.agg.v3; r3.write(idx, acc); hdr.agg.v3 = acc;
        r4.read(acc, idx); acc = acc + hdr.agg.v4; r4.write(idx, acc); hdr.agg.v4 = acc;
        r5.read(acc, idx); acc = acc + hdr.agg.v5; r5.write(idx, acc); hdr.agg.v5 = acc;
        r6.read(acc, idx); acc = acc + hdr.agg.v6; r6.write(idx, acc); hdr.agg.v6 = acc;
        r7.read(acc, idx); acc = acc + hdr.agg.v7; r7.write(idx, acc); hdr.agg.v7 = acc;
        r8.read(acc, idx); acc = acc + hdr.agg.v8; r8.write(idx, acc); hdr.agg.v8 = acc;
        r9.read(acc, idx); acc = acc + hdr.agg.v9; r9.write(idx, acc); hdr.agg.v9 = acc;
        r10.read(acc, idx); acc = acc + hdr.agg.v10; r10.write(idx, acc); hdr.agg.v10 = acc;
        r11.read(acc, idx); acc = acc + hdr.agg.v11; r11.write(idx, acc); hdr.agg.v11 = acc;
        r12.read(acc, idx); acc = acc + hdr.agg.v12; r12.write(idx, acc); hdr.agg.v12 = acc;
        r13.read(acc, idx); acc = acc + hdr.agg.v13; r13.write(idx, acc); hdr.agg.v13 = acc;
        r14.read(acc, idx); acc = acc + hdr.agg.v14; r14.write(idx, acc); hdr.agg.v14 = acc;
        r15.read(acc, idx); acc = acc + hdr.agg.v15; r15.write(idx, acc); hdr.agg.v15 = acc;
        r16.read(acc, idx); acc = acc + hdr.agg.v16; r16.write(idx, acc); hdr.agg.v16 = acc;
        r17.read(acc, idx); acc = acc + hdr.agg.v17; r17.write(idx, acc); hdr.agg.v17 = acc;
        r18.read(acc, idx); acc = acc + hdr.agg.v18; r18.write(idx, acc); hdr.agg.v18 = acc;
        r19.read(acc, idx); acc = acc + hdr.agg.v19; r19.write(idx, acc); hdr.agg.v19 = acc;
        r20.read(acc, idx); acc = acc + hdr.agg.v20; r20.write(idx, acc); hdr.agg.v20 = acc;
        r21.read(acc, idx); acc = acc + hdr.agg.v21; r21.write(idx, acc); hdr.agg.v21 = acc;
        r22.read(acc, idx); acc = acc + hdr.agg.v22; r22.write(idx, acc); hdr.agg.v22 = acc;
        r23.read(acc, idx); acc = acc + hdr.agg.v23; r23.write(idx, acc); hdr.agg.v23 = acc;
        r24.read(acc, idx); acc = acc + hdr.agg.v24; r24.write(idx, acc); hdr.agg.v24 = acc;
        r25.read(acc, idx); acc = acc + hdr.agg.v25; r25.write(idx, acc); hdr.agg.v25 = acc;
        r26.read(acc, idx); acc = acc + hdr.agg.v26; r26.write(idx, acc); hdr.agg.v26 = acc;
        r27.read(acc, idx); acc = acc + hdr.agg.v27; r27.write(idx, acc); hdr.agg.v27 = acc;
        r28.read(acc, idx); acc = acc + hdr.agg.v28; r28.write(idx, acc); hdr.agg.v28 = acc;
        r29.read(acc, idx); acc = acc + hdr.agg.v29; r29.write(idx, acc); hdr.agg.v29 = acc;
        r30.read(acc, idx); acc = acc + hdr.agg.v30; r30.write(idx, acc); hdr.agg.v30 = acc;
        r31.read(acc, idx); acc = acc + hdr.agg.v31; r31.write(idx, acc); hdr.agg.v31 = acc;
        r32.read(acc, idx); acc = acc + hdr.agg.v32; r32.write(idx, acc); hdr.agg.v32 = acc;
        r33.read(acc, idx); acc = acc + hdr.agg.v33; r33.write(idx, acc); hdr.agg.v33 = acc;
        r34.read(acc, idx); acc = acc + hdr.agg.v34; r34.write(idx, acc); hdr.agg.v34 = acc;
        r35.read(acc, idx); acc = acc + hdr.agg.v35; r35.write(idx, acc); hdr.agg.v35 = acc;
        r36.read(acc, idx); acc = acc + hdr.agg.v36; r36.write(idx, acc); hdr.agg.v36 = acc;
        r37.read(acc, idx); acc = acc + hdr.agg.v37; r37.write(idx, acc); hdr.agg.v37 = acc;
        r38.read(acc, idx); acc = acc + hdr.agg.v38; r38.write(idx, acc); hdr.agg.v38 = acc;
        r39.read(acc, idx); acc = acc + hdr.agg.v39; r39.write(idx, acc); hdr.agg.v39 = acc;
        r40.read(acc, idx); acc = acc + hdr.agg.v40; r40.write(idx, acc); hdr.agg.v40 = acc;
        r41.read(acc, idx); acc = acc + hdr.agg.v41; r41.write(idx, acc); hdr.agg.v41 = acc;
        r42.read(acc, idx); acc = acc + hdr.agg.v42; r42.write(idx, acc); hdr.agg.v42 = acc;
        r43.read(acc, idx); acc = acc + hdr.agg.v43; r43.write(idx, acc); hdr.agg.v43 = acc;
        r44.read(acc, idx); acc = acc + hdr.agg.v44; r44.write(idx, acc); hdr.agg.v44 = acc;
        r45.read(acc, idx); acc = acc + hdr.agg.v45; r45.write(idx, acc); hdr.agg.v45 = acc;
        r46.read(acc, idx); acc = acc + hdr.agg.v46; r46.write(idx, acc); hdr.agg.v46 = acc;
        r47.read(acc, idx); acc = acc + hdr.agg.v47; r47.write(idx, acc); hdr.agg.v47 = acc;
        r48.read(acc, idx); acc = acc + hdr.agg.v48; r48.write(idx, acc); hdr.agg.v48 = acc;
        r49.read(acc, idx); acc = acc + hdr.agg.v49; r49.write(idx, acc); hdr.agg.v49 = acc;
        r50.read(acc, idx); acc = acc + hdr.agg.v50; r50.write(idx, acc); hdr.agg.v50 = acc;
        r51.read(acc, idx); acc = acc + hdr.agg.v51; r51.write(idx, acc); hdr.agg.v51 = acc;
        r52.read(acc, idx); acc = acc + hdr.agg.v52; r52.write(idx, acc); hdr.agg.v52 = acc;
        r53.read(acc, idx); acc = acc + hdr.agg.v53; r53.write(idx, acc); hdr.agg.v53 = acc;
        r54.read(acc, idx); acc = acc + hdr.agg.v54; r54.write(idx, acc); hdr.agg.v54 = acc;
        r55.read(acc, idx); acc = acc + hdr.agg.v55; r55.write(idx, acc); hdr.agg.v55 = acc;
        r56.read(acc, idx); acc = acc + hdr.agg.v56; r56.write(idx, acc); hdr.agg.v56 = acc;
        r57.read(acc, idx); acc = acc + hdr.agg.v57; r57.write(idx, acc); hdr.agg.v57 = acc;
        r58.read(acc, idx); acc = acc + hdr.agg.v58; r58.write(idx, acc); hdr.agg.v58 = acc;
        r59.read(acc, idx); acc = acc + hdr.agg.v59; r59.write(idx, acc); hdr.agg.v59 = acc;
        r60.read(acc, idx); acc = acc + hdr.agg.v60; r60.write(idx, acc); hdr.agg.v60 = acc;
        r61.read(acc, idx); acc = acc + hdr.agg.v61; r61.write(idx, acc); hdr.agg.v61 = acc;
        r62.read(acc, idx); acc = acc + hdr.agg.v62; r62.write(idx, acc); hdr.agg.v62 = acc;
        r63.read(acc, idx); acc = acc + hdr.agg.v63; r63.write(idx, acc); hdr.agg.v63 = acc;
        }
    }
}
control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out packet, in headers hdr) { apply { packet.emit(hdr.ethernet); packet.emit(hdr.agg); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
