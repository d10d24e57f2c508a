#include <core.p4>
#include <v1model.p4>

// for loops (P4_16 1.2.5) in an action and in an apply block: the C-style form with a
// declaration, a runtime bound and several updates, break, continue (the update still
// runs), nesting. (The range form is in for_range.p4: p4c 1.2.5.16 refuses it for BMv2.)
header h_t {
    bit<8>  n;
    bit<16> sum;
    bit<8>  odd;
    bit<8>  pairs;
    bit<8>  upto;
}
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action sums() {
        h.h.sum = 0;
        for (bit<8> i = 1; i <= h.h.n; i = i + 1) {
            h.h.sum = h.h.sum + (bit<16>)i;
        }
    }
    apply {
        sums();
        h.h.odd = 0;
        bit<8> j;
        bit<8> k;
        for (j = 0, k = 100; j < 20; j = j + 1, k = k - 1) {
            if ((j & 1) == 0) { continue; }
            if (j >= h.h.n) { break; }
            h.h.odd = h.h.odd + 1;
        }
        h.h.upto = j;
        h.h.pairs = 0;
        for (bit<8> a = 0; a < 4; a = a + 1) {
            for (bit<8> b = a; b < 4; b = b + 1) {
                if (b == 3) { break; }
                h.h.pairs = h.h.pairs + 1;
            }
        }
        sm.egress_spec = 1;
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
