#include <core.p4>
#include <v1model.p4>

// A local of tuple type initialised from a list expression, and a struct of headers
// initialised from nested lists: the elements are evaluated left to right, so a call's
// side effect (through inout) is seen by later elements only.
header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
}
struct headers_t { h_t h; }
struct meta_t { }

bit<8> bump(inout bit<8> x) {
    x = x + 1;
    return x + 10;
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    headers_t tmp = { { h.h.a, bump(h.h.a), 0x1234 } };
    tuple<bit<8>, bit<8>> t = { h.h.a, bump(h.h.a) };
    apply {
        bit<8> after = h.h.a;  // both initializers' calls have run
        h.h = tmp.h;
        h.h.c = h.h.c + (bit<16>)after;
        sm.egress_spec = 1;
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
