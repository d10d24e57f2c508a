/* Idle-timeout test program: two ageing tables (support_timeout = true) and one
 * without, all applied to every Ethernet frame. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

struct headers_t { ethernet_t eth; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    action tag(bit<16> t) { hdr.eth.type = t; }

    table flows {                 // ages: its entries report their last hit
        key = { hdr.eth.dst: exact; }
        actions = { fwd; drop; }
        default_action = drop();
        support_timeout = true;
    }
    table seen {                  // ages too: a packet hitting both reads the clock once
        key = { hdr.eth.src: exact; }
        actions = { tag; NoAction; }
        default_action = NoAction();
        support_timeout = true;
    }
    table plain {                 // does not age
        key = { hdr.eth.type: exact; }
        actions = { tag; NoAction; }
        default_action = NoAction();
    }
    apply {
        flows.apply();
        seen.apply();
        plain.apply();
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
