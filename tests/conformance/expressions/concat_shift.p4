#include <core.p4>
#include <v1model.p4>

// ++ of mixed widths, shifts by constants and by a runtime amount (including amounts >= the
// width), widening before shifting, a rotate, an arithmetic shift of a reinterpreted value,
// and a constant shifted by a runtime amount.
header in_t { bit<8> a; bit<8> b; bit<4> n; bit<4> pad; }
header out_t {
    bit<16> c1;   // a ++ b
    bit<16> c2;   // (a ++ b) << 4
    bit<16> c3;   // (bit<16>)a << 4
    bit<8>  c4;   // a << n
    bit<8>  c5;   // a >> n
    bit<24> c6;   // a ++ (bit<4>)b ++ 4w0xf ++ b
    bit<8>  c7;   // rotate a left by 1
    int<8>  c8;   // (int<8>)a >> n
    bit<16> c9;   // 16w1 << n
}
struct headers_t { in_t i; out_t o; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.i); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        h.o.c1 = h.i.a ++ h.i.b;
        h.o.c2 = (h.i.a ++ h.i.b) << 4;
        h.o.c3 = (bit<16>)h.i.a << 4;
        h.o.c4 = h.i.a << h.i.n;
        h.o.c5 = h.i.a >> h.i.n;
        h.o.c6 = h.i.a ++ (bit<4>)h.i.b ++ 4w0xf ++ h.i.b;
        h.o.c7 = (h.i.a << 1) | (h.i.a >> 7);
        h.o.c8 = ((int<8>)h.i.a) >> h.i.n;
        h.o.c9 = 16w1 << h.i.n;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.i); pkt.emit(h.o); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
