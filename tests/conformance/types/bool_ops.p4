#include <core.p4>
#include <v1model.p4>

// bool locals, && || ! and == on bools, bool -> bit<1> casts, and short-circuit evaluation:
// the right operand (a function call with a side effect) runs only when needed.
header h_t { bit<8> a; bit<8> b; bit<8> r; bit<8> calls; }
struct headers_t { h_t h; }
struct meta_t { }

bool check(inout bit<8> calls, in bit<8> v) {
    calls = calls + 1;
    return v != 0;
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bool x = h.h.a > 5;
        bool y = h.h.b == 0;
        bool z = x && !y;
        bit<8> calls = 0;
        bool sc1 = check(calls, h.h.a) || check(calls, h.h.b);   // 2nd call only if a == 0
        bool sc2 = check(calls, h.h.b) && check(calls, h.h.a);   // 2nd call only if b != 0
        bool eq = x == y;
        h.h.r = (bit<8>)(bit<1>)z | ((bit<8>)(bit<1>)sc1 << 1) | ((bit<8>)(bit<1>)sc2 << 2) |
                ((bit<8>)(bit<1>)eq << 3) | ((bit<8>)(bit<1>)x << 4);
        h.h.calls = calls;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
