#include <core.p4>
#include <v1model.p4>

// recirculate_preserving_field_list from egress until a header counter reaches 3. Header
// changes survive (the deparsed packet re-enters ingress); a preserved metadata field counts
// the rounds; only the final pass produces output, on port 1 + rounds. (One port per round
// count: when a recirculated packet comes back relative to the later inputs depends on
// simple_switch's threads, so the outputs' order across packets is not the test's business.)
header h_t { bit<8> cnt; bit<8> passes; bit<8> itype; bit<8> rounds; }
struct headers_t { h_t h; }
struct meta_t { @field_list(1) bit<8> rounds; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1 + (bit<9>)m.rounds;
        h.h.passes = h.h.passes + 1;
        h.h.itype = (bit<8>)sm.instance_type;
        h.h.rounds = m.rounds;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (h.h.cnt < 3) {
            h.h.cnt = h.h.cnt + 1;
            m.rounds = m.rounds + 1;
            recirculate_preserving_field_list(1);
        }
    }
}
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
