#include <core.p4>
#include <v1model.p4>

// Default actions on a miss: a const default_action with a parameter, a default_action with
// a parameter replaced by STF setdefault, and a table without default_action (NoAction).
header h_t { bit<8> k; bit<8> r1; bit<8> r2; bit<8> r3; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action a1(bit<8> v) { h.h.r1 = v; }
    action a2(bit<8> v) { h.h.r2 = v; }
    action a3(bit<8> v) { h.h.r3 = v; }
    table t1 {
        key = { h.h.k : exact; }
        actions = { a1; }
        const default_action = a1(0x77);
    }
    table t2 {
        key = { h.h.k : exact; }
        actions = { a2; NoAction; }
        default_action = a2(0x11);
    }
    table t3 {
        key = { h.h.k : exact; }
        actions = { a3; }
    }
    apply {
        sm.egress_spec = 1;
        t1.apply();
        t2.apply();
        t3.apply();
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
