#include <core.p4>
#include <v1model.p4>

// An indirect table (implementation = action_profile) shared by two tables: entries point to
// members (action + data); two entries share one member; a member is modified after creation;
// a miss runs the program's default action. The second table declares the profile as a
// control-local instance and names it.
header h_t { bit<8> k; bit<8> k2; bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action set_a(bit<8> v, bit<9> port) { h.h.a = v; sm.egress_spec = port; }
    action set_b(bit<8> v) { h.h.b = v; }
    action miss() { h.h.a = 0xEE; sm.egress_spec = 3; }
    action_profile(32) ap;
    table t {
        key = { h.h.k : exact; }
        actions = { set_a; set_b; miss; }
        default_action = miss();
        implementation = ap;
    }
    table t2 {
        key = { h.h.k2 : ternary; }
        actions = { set_a; set_b; }
        implementation = ap;
    }
    apply {
        sm.egress_spec = 1;
        t.apply();
        t2.apply();
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
