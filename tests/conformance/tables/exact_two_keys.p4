#include <core.p4>
#include <v1model.p4>

// An exact-match table with two key fields; the action picks the output port.
header h_t { bit<8> a; bit<16> b; bit<8> r; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action set(bit<8> v, bit<9> port) { h.h.r = v; sm.egress_spec = port; }
    table t {
        key = { h.h.a : exact; h.h.b : exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
        size = 16;
    }
    apply {
        sm.egress_spec = 1;
        t.apply();
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
