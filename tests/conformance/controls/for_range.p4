#include <core.p4>
#include <v1model.p4>

// The range form of for loops (P4_16 1.2.5), split from for_loops.p4: its bounds are read
// once and its end may be the type's largest value (bit<8> 250 .. 255 runs 6 times).
// innet only: p4c 1.2.5.16's BMv2 back end refuses for-in loops.
header h_t {
    bit<8>  n;
    bit<8>  wrap;
    bit<8>  rng;
}
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.h.wrap = 0;
        for (bit<8> v in 250 .. 255) {
            h.h.wrap = h.h.wrap + 1;
        }
        bit<8> hi = h.h.n;
        h.h.rng = 0;
        for (bit<8> v in 3 .. hi) {
            hi = 0;
            h.h.rng = h.h.rng + v;
        }
        sm.egress_spec = 1;
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
