#include <core.p4>
#include <v1model.p4>

// Functions returning a struct and a header: a struct built field by field and returned,
// an early return from inside an if, a struct result passed straight into another call,
// a header made valid in the function and assigned to a packet header, and a header
// returned without setValid() (invalid: the assignment makes the target invalid, so it
// is not emitted). tag's parameter needs 'in': a directionless one takes only constants.
header h_t { bit<8> a; bit<8> b; }
header t_t { bit<8> v; }
struct pair_t { bit<8> x; bit<8> y; }
struct headers_t { h_t h; t_t t; }
struct meta_t { }

pair_t swap(in pair_t p) { pair_t r; r.x = p.y; r.y = p.x; return r; }
pair_t clamp(in pair_t p) {
    if (p.x > 0x80) { return { 0x80, p.y }; }
    return p;
}
h_t mk(bit<8> v) { h_t r; r.setValid(); r.a = v; r.b = v + 1; return r; }
t_t tag(in bit<8> v) { t_t r; if (v != 0) { r.setValid(); r.v = v; } return r; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); pkt.extract(h.t); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        pair_t p = { h.h.a, h.h.b };
        pair_t q = clamp(swap(p));
        h.h.a = q.x;
        h.h.b = q.y;
        if (h.h.a == 0x80) { h.h = mk(7); }
        h.t = tag(h.t.v);
        sm.egress_spec = 1;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); pkt.emit(h.t); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
