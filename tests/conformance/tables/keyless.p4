#include <core.p4>
#include <v1model.p4>

// Tables without a key always run their default action; one default is replaced by STF
// setdefault, the other is const.
header h_t { bit<8> r1; bit<8> r2; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action a(bit<8> v) { h.h.r1 = v; }
    action b(bit<8> v, bit<9> port) { h.h.r2 = v; sm.egress_spec = port; }
    table k1 {
        actions = { a; }
        default_action = a(1);
    }
    table k2 {
        actions = { b; }
        const default_action = b(5, 2);
    }
    apply {
        k1.apply();
        k2.apply();
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
