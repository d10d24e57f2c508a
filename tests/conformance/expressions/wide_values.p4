#include <core.p4>
#include <v1model.p4>

// Values wider than 64 bits: +, * with carries across 64-bit words, shifts across words,
// an arithmetic shift and sign extension of int<72>, ++ to 104 bits, a slice across a
// word boundary, comparisons, an exact key and an action parameter of bit<128>, and a
// bit<128> register accumulating across packets.
header in_t {
    bit<128> a;
    bit<128> b;
    int<72>  c;
    bit<96>  d;
}
header out_t {
    bit<128> s;     // a + b
    bit<128> m;     // a * 3
    bit<128> l;     // a << 68
    bit<128> r;     // a >> 70
    int<72>  sr;    // c >> 4 (arithmetic)
    bit<104> cat;   // d ++ 8w0x5a
    bit<64>  sl;    // a[99:36]
    bit<128> ext;   // (bit<128>)(int<128>)c
    bit<128> acc;   // register: running sum of a
    bit<8>   flags; // 1: a < b, 2: c < 0, 4: table hit
}
struct headers_t {
    in_t  i;
    out_t o;
}
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.i); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<128>>(1) total;
    action put(bit<128> v) { h.i.b = v; }
    table t {
        key = { h.i.a : exact; }
        actions = { put; NoAction; }
        default_action = NoAction();
    }
    apply {
        h.o.setValid();
        h.o.flags = 0;
        if (t.apply().hit) { h.o.flags = 4; }
        h.o.s = h.i.a + h.i.b;
        h.o.m = h.i.a * 3;
        h.o.l = h.i.a << 68;
        h.o.r = h.i.a >> 70;
        h.o.sr = h.i.c >> 4;
        h.o.cat = h.i.d ++ 8w0x5a;
        h.o.sl = h.i.a[99:36];
        h.o.ext = (bit<128>)(int<128>)h.i.c;
        bit<128> v;
        total.read(v, 0);
        v = v + h.i.a;
        total.write(0, v);
        h.o.acc = v;
        if (h.i.a < h.i.b) { h.o.flags = h.o.flags | 1; }
        if (h.i.c < 0) { h.o.flags = h.o.flags | 2; }
        sm.egress_spec = 1;
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.i); pkt.emit(h.o); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
