#include <core.p4>
#include <v1model.p4>

// const entries mixing a range key and a ternary key, with _ wildcards; without explicit
// priorities the entry listed first wins.
header h_t { bit<16> port; bit<8> flags; bit<8> r; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action act(bit<8> v) { h.h.r = v; }
    table t {
        key = { h.h.port : range; h.h.flags : ternary; }
        actions = { act; NoAction; }
        const entries = {
            (16w0 .. 16w1023, 8w0x02 &&& 8w0x02) : act(1);
            (16w80 .. 16w80, _) : act(2);
            (_, 8w0x80 &&& 8w0x80) : act(3);
        }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        t.apply();
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
