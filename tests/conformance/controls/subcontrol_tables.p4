#include <core.p4>
#include <v1model.p4>

// One control type with a table, instantiated twice with different constructor arguments;
// each instance has its own table (Ing.s1.t and Ing.s2.t) with its own entries.
header h_t { bit<8> k; bit<8> r; }
struct headers_t { h_t h1; h_t h2; }
struct meta_t { }

control Sub(inout h_t hh)(bit<8> inc) {
    action set(bit<8> v) { hh.r = v + inc; }
    table t {
        key = { hh.k : exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); }
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h1); pkt.extract(h.h2); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    Sub(8w1) s1;
    Sub(8w2) s2;
    apply {
        sm.egress_spec = 1;
        s1.apply(h.h1);
        s2.apply(h.h2);
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h1); pkt.emit(h.h2); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
