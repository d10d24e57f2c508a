#include <core.p4>
#include <v1model.p4>

// Tables with implementation = action_selector: entries point to a member or to a group,
// and a group picks one member by hashing the 'selector' keys: index = H(keys) % size,
// over the members ordered by handle (BMv2), whatever order they were added in.
// ts hashes one 8-bit key with identity (index = s % size); tc hashes two 8-bit keys with
// crc16 (CRC-16/ARC over the bytes s, s2). A group emptied after an entry points to it
// makes that entry run no action; a default group handles misses.
header h_t { bit<8> k; bit<8> s; bit<8> s2; bit<8> tag; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port, bit<8> tag) { sm.egress_spec = port; h.h.tag = tag; }
    table ts {
        key = { h.h.k : exact; h.h.s : selector; }
        actions = { fwd; }
        implementation = action_selector(HashAlgorithm.identity, 32, 16);
    }
    table tc {
        key = { h.h.k : exact; h.h.s : selector; h.h.s2 : selector; }
        actions = { fwd; }
        implementation = action_selector(HashAlgorithm.crc16, 32, 16);
    }
    apply {
        sm.egress_spec = 7;
        if (h.h.k[7:7] == 0) {
            ts.apply();
        } else {
            tc.apply();
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
