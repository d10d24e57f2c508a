#include <core.p4>
#include <v1model.p4>

// Table applies inside conditions: `!t.apply().hit`, an apply in an else-if condition (only
// evaluated when reached), and an apply as the right operand of && (only applied when the
// left operand is true; its action's effect shows whether it ran).
header h_t { bit<8> k; bit<8> r1; bit<8> r2; bit<8> r3; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action set3(bit<8> v) { h.h.r3 = v; }
    action set2(bit<8> v) { h.h.r2 = v; }
    table t1 { key = { h.h.k : exact; } actions = { NoAction; } default_action = NoAction(); }
    table t2 { key = { h.h.k : exact; } actions = { set3; NoAction; } default_action = NoAction(); }
    table t3 { key = { h.h.k : exact; } actions = { set2; NoAction; } default_action = NoAction(); }
    apply {
        sm.egress_spec = 1;
        if (!t1.apply().hit) {
            h.h.r1 = 0xee;
        } else if (t2.apply().hit) {
            h.h.r1 = 0x22;
        } else {
            h.h.r1 = 0x11;
        }
        if (h.h.k > 5 && t3.apply().hit) {
            h.h.r3 = 0x99;
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
