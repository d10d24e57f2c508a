#include <core.p4>
#include <v1model.p4>

// A count byte n, then n 16-bit elements extracted with .next in a loop driven by a
// metadata counter. n > 4 overflows the 4-element stack (StackOutOfBounds); fewer bytes
// than announced gives PacketTooShort.
header n_t { bit<8> n; }
header e_t { bit<16> v; }
header o_t { bit<8> err; bit<8> valid; }
struct headers_t { n_t n; o_t o; e_t[4] s; }
struct meta_t { bit<8> remaining; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.n);
        m.remaining = h.n.n;
        transition select(m.remaining) { 0: accept; default: loop; }
    }
    state loop {
        pkt.extract(h.s.next);
        m.remaining = m.remaining - 1;
        transition select(m.remaining) { 0: accept; default: loop; }
    }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        if (sm.parser_error == error.NoError) { h.o.err = 0; }
        else if (sm.parser_error == error.PacketTooShort) { h.o.err = 1; }
        else if (sm.parser_error == error.StackOutOfBounds) { h.o.err = 3; }
        else { h.o.err = 0xff; }
        h.o.valid = (h.s[0].isValid() ? 8w1 : 8w0) | (h.s[1].isValid() ? 8w2 : 8w0) |
                    (h.s[2].isValid() ? 8w4 : 8w0) | (h.s[3].isValid() ? 8w8 : 8w0);
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.n); pkt.emit(h.o); pkt.emit(h.s); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
