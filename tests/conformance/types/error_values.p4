#include <core.p4>
#include <v1model.p4>

// Values of type error in a local variable and in a metadata struct; == and != on errors.
error { Custom1, Custom2 }

header h_t { bit<8> a; bit<8> b; }
header o_t { bit<8> r; }
struct headers_t { o_t o; h_t h; }
struct meta_t { error e; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.h);
        verify(h.h.a != 0, error.Custom2);
        transition accept;
    }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        error e = sm.parser_error;
        if (e == error.NoError) { m.e = error.Custom1; } else { m.e = e; }
        h.o.setValid();
        h.o.r = 0;
        if (m.e == error.Custom1) { h.o.r = h.o.r | 1; }
        if (m.e == error.Custom2) { h.o.r = h.o.r | 2; }
        if (m.e == error.PacketTooShort) { h.o.r = h.o.r | 4; }
        if (e != error.NoError) { h.o.r = h.o.r | 8; }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.o); pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
