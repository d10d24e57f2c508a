#include <core.p4>
#include <v1model.p4>

// hash() over a 13-byte 5-tuple (odd length) with crc16, crc32, csum16, xor16 and identity;
// crc16 reduced modulo 1024 and crc32 reduced modulo 100 with base 10 into an 8-bit field.
header five_t { bit<32> src; bit<32> dst; bit<8> proto; bit<16> sport; bit<16> dport; }
header out_t {
    bit<16> c16;      // crc16, max 2^16
    bit<32> c32;      // crc32, max 2^32
    bit<16> cs;       // csum16
    bit<16> x16;      // xor16
    bit<16> c16mod;   // crc16 % 1024
    bit<8>  c32mod;   // 10 + crc32 % 100
    bit<32> id;       // identity over {sport, dport}
}
struct headers_t { five_t f; out_t o; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.f); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        hash(h.o.c16, HashAlgorithm.crc16, 16w0,
             { h.f.src, h.f.dst, h.f.proto, h.f.sport, h.f.dport }, 32w65536);
        hash(h.o.c32, HashAlgorithm.crc32, 32w0,
             { h.f.src, h.f.dst, h.f.proto, h.f.sport, h.f.dport }, 64w4294967296);
        hash(h.o.cs, HashAlgorithm.csum16, 16w0,
             { h.f.src, h.f.dst, h.f.proto, h.f.sport, h.f.dport }, 32w65536);
        hash(h.o.x16, HashAlgorithm.xor16, 16w0,
             { h.f.src, h.f.dst, h.f.proto, h.f.sport, h.f.dport }, 32w65536);
        hash(h.o.c16mod, HashAlgorithm.crc16, 16w0,
             { h.f.src, h.f.dst, h.f.proto, h.f.sport, h.f.dport }, 32w1024);
        hash(h.o.c32mod, HashAlgorithm.crc32, 8w10,
             { h.f.src, h.f.dst, h.f.proto, h.f.sport, h.f.dport }, 32w100);
        hash(h.o.id, HashAlgorithm.identity, 32w0, { h.f.sport, h.f.dport }, 64w4294967296);
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.f); pkt.emit(h.o); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
