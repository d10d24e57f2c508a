#include <core.p4>
#include <v1model.p4>

// A header field of struct type (P4_16 1.2): its fields are read, written, used as a table
// key and copied as a whole; a list initializer of such a header nests the struct's
// fields. The wire layout is the fields in order.
struct row_t {
    bit<8>  e;
    bit<16> t;
    bit<8>  l;
}
header hdr_t {
    bit<8> pre;
    row_t  row;
    bit<8> post;
}
struct headers_t {
    hdr_t h;
    hdr_t g;
}
struct meta_t { row_t saved; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action to(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { h.h.row.e : exact; }
        actions = { to; }
        default_action = to(0);
    }
    apply {
        t.apply();
        m.saved = h.h.row;
        h.h.row.t = h.h.row.t + 1;
        h.g = { h.h.post, { m.saved.l, m.saved.t, m.saved.e }, h.h.pre };
        if (h.g.row == m.saved) { h.g.post = 0xff; }
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); pkt.emit(h.g); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
