#include <core.p4>
#include <v1model.p4>

// Registers used in egress: an 8-bit per-port packet counter (preset and wrapping) and a
// 16-bit per-port "previous value" cell that returns what the port's last packet stored.
// Per port, because simple_switch runs each port's egress queue in its own thread: packets
// for different ports may pass egress in either order, so a cell they share is racy there.
header h_t { bit<8> port; bit<16> val; bit<8> cnt; bit<16> prev; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = (bit<9>)h.h.port; }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<8>>(4) r_cnt;
    register<bit<16>>(4) r_last;
    apply {
        bit<8> c;
        r_cnt.read(c, (bit<32>)sm.egress_port);
        c = c + 1;
        r_cnt.write((bit<32>)sm.egress_port, c);
        h.h.cnt = c;
        r_last.read(h.h.prev, (bit<32>)sm.egress_port);
        r_last.write((bit<32>)sm.egress_port, h.h.val);
    }
}
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
