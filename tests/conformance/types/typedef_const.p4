#include <core.p4>
#include <v1model.p4>

// typedef of a typedef, `type`, constants of several kinds, and widths computed from
// compile-time expressions: bit<(2*4)> and bit<(SHIFT * 8)>.
typedef bit<8> u8;
typedef u8 byte_t;
const bit<8> BASE = 8w0x10;
const int SHIFT = 2;
const bit<(2*4)> MASK = 0x0f;
typedef bit<(SHIFT * 8)> u16;
type bit<16> Port_t;
const bit<16> LOW12 = (1 << 12) - 1;

header h_t { byte_t a; u16 w; bit<8> r1; bit<8> r2; u16 r3; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.h.r1 = (h.h.a & MASK) + BASE;
        h.h.r2 = h.h.a << SHIFT;
        Port_t p = (Port_t)h.h.w;
        h.h.r3 = (bit<16>)p & LOW12;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
