#include <core.p4>
#include <v1model.p4>

// push_front / pop_front on a 4-element stack that was partly filled by the parser.
header cmd_t { bit<8> op; bit<8> n; }
header e_t   { bit<8> v; }
header o_t   { bit<8> valid; }
struct headers_t { cmd_t cmd; o_t o; e_t[4] s; }
struct meta_t { bit<8> remaining; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.cmd);
        m.remaining = h.cmd.n;
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
        if (h.cmd.op == 1) {
            h.s.push_front(1);
            h.s[0].setValid();
            h.s[0].v = 0xaa;
        } else if (h.cmd.op == 2) {
            h.s.pop_front(2);
        } else if (h.cmd.op == 3) {
            h.s.push_front(2);
            h.s.pop_front(1);
        } else if (h.cmd.op == 4) {
            h.s.pop_front(1);
            h.s.push_front(1);
        }
        h.o.setValid();
        h.o.valid = (h.s[0].isValid() ? 8w1 : 8w0) | (h.s[1].isValid() ? 8w2 : 8w0) |
                    (h.s[2].isValid() ? 8w4 : 8w0) | (h.s[3].isValid() ? 8w8 : 8w0);
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.cmd); pkt.emit(h.o); pkt.emit(h.s); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
