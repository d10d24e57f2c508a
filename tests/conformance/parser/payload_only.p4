#include <core.p4>
#include <v1model.p4>

// A parser that extracts nothing: the whole packet is payload. Ingress makes a header valid,
// so it is emitted in front of the payload. An empty packet gets just the new header.
header o_t { bit<16> tag; bit<8> err; }
struct headers_t { o_t o; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        h.o.setValid();
        h.o.tag = 0xbeef;
        h.o.err = (sm.parser_error == error.NoError) ? 8w0 : 8w1;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.o); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
