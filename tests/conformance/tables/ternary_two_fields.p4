#include <core.p4>
#include <v1model.p4>

// Two ternary key fields; overlapping entries resolved by priority only (a more specific
// entry with a lower priority loses). In STF the larger priority number wins.
header h_t { bit<8> a; bit<8> b; bit<8> r; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action act(bit<8> v) { h.h.r = v; }
    table tt {
        key = { h.h.a : ternary; h.h.b : ternary; }
        actions = { act; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        tt.apply();
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
