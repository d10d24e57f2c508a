#include <core.p4>
#include <v1model.p4>

// Differential-test program (native vs python executor): an indexed meter (bytes), a
// direct meter (packets) with a direct counter on an ageing (support_timeout) table, and
// a digest. The test configures rates, advances an injected clock between packets and
// compares colours, meter buckets, counts and last-hit stamps.
header h_t { bit<8> k; bit<8> idx; bit<8> c1; bit<8> c2; bit<16> len; }
struct headers_t { h_t h; }
struct meta_t { }
struct dig_t { bit<8> k; bit<8> c1; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    meter(32w8, MeterType.bytes) mb;
    direct_meter<bit<8>>(MeterType.packets) dm;
    direct_counter(CounterType.packets_and_bytes) dc;
    action colour(bit<9> port) { sm.egress_spec = port; dm.read(h.h.c2); }
    action plain(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { h.h.k : ternary; }
        actions = { colour; plain; NoAction; }
        meters = dm;
        counters = dc;
        support_timeout = true;
        default_action = plain(3);
    }
    apply {
        mb.execute_meter((bit<32>)h.h.idx, h.h.c1);
        t.apply();
        if (h.h.c1 == 2) { digest<dig_t>(1, { h.h.k, h.h.c1 }); }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
