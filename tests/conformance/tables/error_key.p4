#include <core.p4>
#include <v1model.p4>

// A table key of type error (BMv2: its 32-bit number; NoError 0, PacketTooShort 1, ...,
// ParserInvalidArgument 6, then the program's own errors in declaration order).
error { ZeroA }

header h_t {
    bit<8> a;
    bit<8> b;
}
struct headers_t { h_t h; }
struct meta_t { error e; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.h);
        verify(h.h.a != 0, error.ZeroA);
        transition accept;
    }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action set(bit<8> v) { h.h.b = v; }
    table t {
        key = { m.e : exact; }
        actions = { set; }
        default_action = set(0xee);
    }
    apply {
        m.e = sm.parser_error;
        t.apply();
        sm.egress_spec = 1;
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
