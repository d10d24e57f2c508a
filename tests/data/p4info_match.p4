// A small v1model program with one object of each kind the P4Info check compares
// (tests/unit/test_p4runtime_p4info_match.py).
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
    state start { pkt.extract(hdr.eth); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(16) regs;
    counter(8, CounterType.packets) pkts;
    meter(4, MeterType.bytes) rate;

    action fwd(bit<9> port, bit<48> mac) {
        sm.egress_spec = port;
        hdr.eth.dst = mac;
        regs.write(0, 1);
        pkts.count(0);
    }
    action drop() { mark_to_drop(sm); }

    table t {
        key = { hdr.eth.dst: exact; hdr.eth.type: ternary; }
        actions = { fwd; drop; NoAction; }
        size = 64;
        default_action = NoAction();
    }

    apply { t.apply(); }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
