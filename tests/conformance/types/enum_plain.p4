#include <core.p4>
#include <v1model.p4>

// A plain (non-serializable) enum held in metadata, switch on it, and enum comparisons.
enum Op { Add, Sub, Pass }

header h_t { bit<8> code; bit<8> x; bit<8> y; bit<8> r; bit<8> flag; }
struct headers_t { h_t h; }
struct meta_t { Op op; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.h.code == 1) { m.op = Op.Add; }
        else if (h.h.code == 2) { m.op = Op.Sub; }
        else { m.op = Op.Pass; }
        switch (m.op) {
            Op.Add:  { h.h.r = h.h.x + h.h.y; }
            Op.Sub:  { h.h.r = h.h.x - h.h.y; }
            Op.Pass: { h.h.r = h.h.x; }
        }
        Op local = Op.Pass;
        h.h.flag = (m.op != local) ? 8w1 : 8w0;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
