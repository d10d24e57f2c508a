#include <core.p4>
#include <v1model.p4>

// A stack of header unions filled with extract(u.next.member): each extract fills the next
// element (one of its members) and advances the stack, so the second extract lands in u[1].
header tag_t { bit<8> kind; }
header one_t { bit<8> v; }
header two_t { bit<16> v; }
header_union u_t { one_t one; two_t two; }
struct headers_t { tag_t tag; u_t[2] u; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.tag);
        transition select(h.tag.kind) {
            1: one_then_two;
            2: two_then_one;
            default: accept;
        }
    }
    state one_then_two { pkt.extract(h.u.next.one); pkt.extract(h.u.next.two); transition accept; }
    state two_then_one { pkt.extract(h.u.next.two); pkt.extract(h.u.next.one); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.u[1].one.isValid()) { h.u[1].one.v = 0xbb; }
        if (h.u[1].two.isValid()) { h.u[1].two.v = 0xcccc; }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.tag); pkt.emit(h.u); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
