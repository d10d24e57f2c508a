#include <core.p4>
#include <v1model.p4>

// switch on a bit<8> value with grouped labels (1: 2: {...}) and default, and switch on
// action_run with grouped action labels, an empty arm and default (taken on a miss).
header h_t { bit<8> k; bit<8> r; bit<8> r2; bit<8> r3; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action a1() { h.h.r3 = 1; }
    action a2() { h.h.r3 = 2; }
    action a3() { h.h.r3 = 3; }
    table t {
        key = { h.h.k : exact; }
        actions = { a1; a2; a3; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        switch (h.h.k) {
            1:
            2: { h.h.r = 0x12; }
            3: { h.h.r = 0x03; }
            default: { h.h.r = 0xdd; }
        }
        switch (t.apply().action_run) {
            a1:
            a2: { h.h.r2 = 0xaa; }
            a3: { }
            default: { h.h.r2 = 0xdf; }
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
