#include <core.p4>
#include <v1model.p4>

// truncate(n) in ingress: the packet sent out is cut to its first n bytes (counted on the
// deparsed packet, headers included). A length larger than the packet changes nothing.
header h_t { bit<8> op; bit<8> mark; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.h.op == 1) { truncate(32w4); }
        else if (h.h.op == 3) { truncate(32w100); }
        h.h.mark = 0xaa;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
