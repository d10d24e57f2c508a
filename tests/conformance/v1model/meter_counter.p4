#include <core.p4>
#include <v1model.p4>

// counter, direct_counter and meter instances. Counting does not change the packet. A meter
// whose rates were never configured colours every packet GREEN (0).
header h_t { bit<8> k; bit<8> color; bit<8> hit; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    counter(32w4, CounterType.packets) c;
    direct_counter(CounterType.packets_and_bytes) dc;
    meter(32w4, MeterType.bytes) mt;
    action hit_a() { h.h.hit = 1; }
    table t {
        key = { h.h.k : exact; }
        actions = { hit_a; NoAction; }
        counters = dc;
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        c.count((bit<32>)h.h.k);
        mt.execute_meter((bit<32>)h.h.k, h.h.color);
        t.apply();
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
