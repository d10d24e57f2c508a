#include <core.p4>
#include <v1model.p4>

// Actions with directional parameters (in, inout, out) called directly and bound in a
// table's action list, actions with action data from the control plane, and an action that
// calls another action.
header h_t { bit<8> k; bit<8> x; bit<8> y; bit<8> z; bit<8> w; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action add_to(inout bit<8> acc, in bit<8> v) { acc = acc + v; }
    action set_to(out bit<8> o, bit<8> d) { o = d; }
    action both(bit<8> d) {
        add_to(h.h.x, d);
        h.h.w = d;
    }
    table t {
        key = { h.h.k : exact; }
        actions = { set_to(h.h.y); both; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        add_to(h.h.z, 3);
        t.apply();
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
