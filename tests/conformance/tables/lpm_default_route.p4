#include <core.p4>
#include <v1model.p4>

// LPM with a /0 default route, a /4 prefix and nested /16 and /32 prefixes.
header h_t { bit<32> addr; bit<8> tag; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action route(bit<9> port, bit<8> tag) { sm.egress_spec = port; h.h.tag = tag; }
    table lpm_t {
        key = { h.h.addr : lpm; }
        actions = { route; NoAction; }
        default_action = NoAction();
    }
    apply { lpm_t.apply(); }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
