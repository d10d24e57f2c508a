#include <core.p4>
#include <v1model.p4>

// const entries with explicit priorities on a ternary table. With the default
// largest_priority_wins = true the entry with the larger priority wins, whatever its position.
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
            priority=10: 8w0x10 &&& 8w0xf0 : act(1);
            priority=20: 8w0x01 &&& 8w0x0f : act(2);
            priority=5:  _ : act(3);
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
