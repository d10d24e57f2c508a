#include <core.p4>
#include <v1model.p4>

// A ternary key of a serializable enum type with const entries masked by a plain number:
// the mask is a bit pattern of the enum's underlying bit<8>, so 'Kind.HI &&& 0xf0' matches
// every value whose high nibble is that of Kind.HI (0x40), member or not.
enum bit<8> Kind { LO = 0x01, HI = 0x42 }
header h_t { Kind k; bit<8> r; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action set(bit<8> v) { h.h.r = v; }
    table t {
        key = { h.h.k : ternary; }
        actions = { set; NoAction; }
        const entries = {
            Kind.LO : set(1);
            Kind.HI &&& 0xf0 : set(2);
        }
        default_action = NoAction();
    }
    apply { sm.egress_spec = 1; t.apply(); }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
