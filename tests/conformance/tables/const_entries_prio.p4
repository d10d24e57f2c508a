#include <core.p4>
#include <v1model.p4>

// const entries ranked by p4c's (non-standard) @priority annotation on a ternary table. p4c
// rejects 'priority=N:' in const entries; its BMv2 back end gives each const entry its
// @priority value, or else its position counted from 1, and the SMALLEST number wins,
// whatever the position (the first entry here has rank 2 and loses to the second's 1).
header h_t { bit<8> a; bit<8> r; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action act(bit<8> v) { h.h.r = v; }
    table t {
        key = { h.h.a : ternary; }
        actions = { act; NoAction; }
        const entries = {
            8w0x10 &&& 8w0xf0 : act(1) @priority(2);
            8w0x01 &&& 8w0x0f : act(2) @priority(1);
            _ : act(3) @priority(3);
        }
        default_action = NoAction();
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
