#include <core.p4>
#include <v1model.p4>

// Direct invocation of a control type (Wrap.apply(...)) applies a fresh instance named
// after the type (p4c: @name("Wrap"), so its table is I.Wrap.t), and a control instance
// passed as a constructor argument: Twice and Once apply the same Count instance, whose
// register is therefore bumped three times per packet.
header h_t {
    bit<8>  k;
    bit<16> x;
    bit<8>  n;
}
struct headers_t { h_t h; }
struct meta_t { }

control count_t(inout bit<8> n);

control Count(inout bit<8> n) {
    register<bit<8>>(1) r;
    apply {
        bit<8> v;
        r.read(v, 0);
        v = v + 1;
        r.write(0, v);
        n = v;
    }
}
control Twice(inout bit<8> n)(count_t c) {
    apply {
        c.apply(n);
        c.apply(n);
    }
}
control Once(inout bit<8> n)(count_t c) {
    apply { c.apply(n); }
}
control Wrap(inout h_t h) {
    Count() shared;
    Twice(shared) tw;
    Once(shared) on;
    action set(bit<16> v) { h.x = v; }
    table t {
        key = { h.k : exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply {
        t.apply();
        tw.apply(h.n);
        on.apply(h.n);
    }
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        Wrap.apply(h.h);
        sm.egress_spec = 1;
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
