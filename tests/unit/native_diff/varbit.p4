#include <core.p4>
#include <v1model.p4>

// Differential-test program (native vs python executor): IPv4 with options as a varbit
// sized by ihl, a second varbit header sized by a field, varbit equality, a checksum over
// a field list with a varbit (with and without payload), a hash over it, emit, varbit
// headers in a stack (extract into next), and a
// clone that re-parses the packet.
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
    varbit<320> options;
}
header opt_t { bit<8> n; varbit<64> data; bit<8> tail; }
header r_t { bit<8> code; bit<8> eq; bit<16> h; bit<16> c2; }
struct headers_t { eth_t eth; r_t r; ipv4_t ip; opt_t o1; opt_t[2] os; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.eth);
        transition select(h.eth.type) { 0x0800: ip; 0x88b5: opts; default: accept; }
    }
    state ip {
        bit<8> vi = pkt.lookahead<bit<8>>();
        pkt.extract(h.ip, ((bit<32>)vi[3:0] << 5) - 160);
        transition accept;
    }
    state opts {
        pkt.extract(h.o1, (bit<32>)pkt.lookahead<bit<8>>() * 8);
        pkt.extract(h.os.next, (bit<32>)pkt.lookahead<bit<8>>() * 8);
        transition select(h.os[0].tail) { 0x55: more; default: accept; }
    }
    state more {
        pkt.extract(h.os.next, (bit<32>)pkt.lookahead<bit<8>>() * 8);
        transition accept;
    }
}
control VC(inout headers_t h, inout meta_t m) {
    apply {
        verify_checksum(h.ip.isValid(), { h.ip.version, h.ip.ihl, h.ip.tos, h.ip.len, h.ip.id, h.ip.flags,
                        h.ip.frag, h.ip.ttl, h.ip.proto, h.ip.src, h.ip.dst, h.ip.options }, h.ip.csum,
                        HashAlgorithm.csum16);
    }
}
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.r.setValid();
        if (sm.parser_error == error.NoError) { h.r.code = 0; }
        else if (sm.parser_error == error.PacketTooShort) { h.r.code = 1; }
        else if (sm.parser_error == error.HeaderTooShort) { h.r.code = 4; }
        else if (sm.parser_error == error.ParserInvalidArgument) { h.r.code = 6; }
        else { h.r.code = 0xee; }
        h.r.eq = sm.checksum_error == 1 ? 8w0xcc : 8w0;
        if (h.o1.isValid() && h.os[0].isValid()) {
            h.r.eq = h.r.eq | ((h.o1.data == h.os[0].data) ? 8w1 : 8w0) | ((h.o1 == h.os[0]) ? 8w2 : 8w0);
            hash(h.r.h, HashAlgorithm.crc16, 16w0, { h.o1.n, h.o1.data, h.os[0].data }, 17w65536);
        }
        if (h.ip.isValid()) {
            hash(h.r.h, HashAlgorithm.crc32, 16w7, { h.ip.options, h.ip.ttl }, 17w1000);
            h.ip.ttl = h.ip.ttl - 1;
            if (h.ip.ttl == 3) { clone(CloneType.I2E, 5); }
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) {
    apply {
        update_checksum(h.ip.isValid(), { h.ip.version, h.ip.ihl, h.ip.tos, h.ip.len, h.ip.id, h.ip.flags,
                        h.ip.frag, h.ip.ttl, h.ip.proto, h.ip.src, h.ip.dst, h.ip.options }, h.ip.csum,
                        HashAlgorithm.csum16);
        update_checksum_with_payload(h.o1.isValid(), { h.o1.n, h.o1.data, h.o1.tail }, h.r.c2,
                                     HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers_t h) {
    apply { pkt.emit(h.eth); pkt.emit(h.r); pkt.emit(h.ip); pkt.emit(h.o1); pkt.emit(h.os); }
}

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
