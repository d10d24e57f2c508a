/* Values wider than 64 bits, for the differential test of the native executor against
 * the python one (tests/unit/test_native_differential.py): wide header fields, metadata,
 * locals, registers, table keys (exact, lpm, ternary, range) and action parameters,
 * arithmetic, shifts, comparisons, casts, concatenation, slices, hash inputs, digests.
 * lo_a/lo_b: two bit<32> registers indexed together, which the native executor fuses
 * into one block (switch/native/fuse.py) next to the wide registers' own blocks. */
#include <core.p4>
#include <v1model.p4>

header eth_t {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

header w_t {
    bit<8>   op;
    bit<8>   sh;
    bit<128> a;
    bit<96>  b;
    int<72>  c;
    bit<200> d;
    bit<16>  small;
}

header out_t {
    bit<128> r1;
    bit<128> r2;
    int<72>  r3;
    bit<104> r4;
    bit<40>  r5;
    bit<200> r6;
    bit<8>   flags;
}

struct headers_t {
    eth_t eth;
    w_t   w;
    out_t o;
}

struct wide_digest_t {
    bit<128> a;
    int<72>  c;
    bit<8>   op;
}

struct meta_t {
    bit<128> m;
    int<100> n;
    bit<96>  key;
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.eth);
        transition select(h.eth.type) {
            0x88b6: parse_w;
            default: accept;
        }
    }
    state parse_w {
        pkt.extract(h.w);
        transition select(h.w.a) {
            128w0x0000000000000000ffffffffffffffff &&& 128w0xffffffffffffffff0000000000000000: plain;
            128w1 .. 128w0x100000000000000000000: plain;
            0xdeadbeefdeadbeefdeadbeefdeadbeef: accept;
            default: with_out;
        }
    }
    state plain {
        transition accept;
    }
    state with_out {
        h.o.setValid();
        transition accept;
    }
}

control VC(inout headers_t h, inout meta_t m) { apply { } }

bit<128> mix(in bit<128> x, in bit<96> y) {
    return (x ^ (bit<128>)y) + (x >> 3);
}

control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<128>>(16) r128;
    register<bit<32>>(16) lo_a;
    register<bit<32>>(16) lo_b;
    register<int<80>>(8) r80;

    action set_port(bit<9> port) {
        sm.egress_spec = port;
    }
    action put_wide(bit<128> v, bit<9> port) {
        h.w.a = v;
        m.m = v + 1;
        sm.egress_spec = port;
    }
    action put_two(bit<96> v, int<72> s) {
        h.w.b = v;
        h.w.c = s;
    }
    action drop() {
        mark_to_drop(sm);
    }
    table exact_wide {
        key = { h.w.a : exact; }
        actions = { put_wide; set_port; drop; }
        default_action = set_port(1);
    }
    table lpm_wide {
        key = { h.w.b : lpm; }
        actions = { put_two; NoAction; }
        default_action = NoAction();
    }
    table ternary_wide {
        key = { h.w.d : ternary; h.w.op : exact; }
        actions = { put_wide; NoAction; }
        default_action = NoAction();
    }
    table range_wide {
        key = { h.w.c : range; }
        actions = { put_two; NoAction; }
        default_action = NoAction();
        const entries = {
            0 .. 5: put_two(96w0xaaaa, 72s1);
            -100 .. -1: put_two(96w0xcccc, 72s3);
            72s0x100000000000000000 .. 72s0x7fffffffffffffffff: put_two(96w0xbbbb, -2);
        }
    }

    apply {
        if (!h.w.isValid()) {
            sm.egress_spec = 2;
            return;
        }
        exact_wide.apply();
        lpm_wide.apply();
        ternary_wide.apply();
        range_wide.apply();
        bit<128> x = h.w.a;
        bit<96> y = h.w.b;
        int<72> z = h.w.c;
        bit<8> s = h.w.sh;
        m.key = y;
        if (h.o.isValid()) {
            h.o.r1 = x + (bit<128>)y;
            h.o.r2 = x * (bit<128>)h.w.small;
            if (h.w.op == 1) {
                h.o.r1 = x - (bit<128>)y;
                h.o.r2 = x << s;
            } else if (h.w.op == 2) {
                h.o.r1 = x >> s;
                h.o.r2 = x << (bit<128>)h.w.d;
            } else if (h.w.op == 3) {
                h.o.r1 = x / (bit<128>)y;
                h.o.r2 = x % (bit<128>)h.w.small;
            } else if (h.w.op == 4) {
                h.o.r1 = x |+| (bit<128>)y;
                h.o.r2 = (bit<128>)y |-| x;
            } else if (h.w.op == 5) {
                h.o.r1 = ~x;
                h.o.r2 = -x;
            } else if (h.w.op == 6) {
                h.o.r1 = mix(x, y);
                h.o.r2 = x & 128w0xffff0000ffff0000ffff0000ffff0000 | (bit<128>)y ^ 77;
            } else if (h.w.op == 7) {
                bit<128> acc = 0;
                for (bit<8> i = 0; i < h.w.sh && i < 10; i = i + 1) {
                    acc = acc + (x >> i);
                }
                h.o.r1 = acc;
                h.o.r2 = x[127:64] ++ y[63:0];
            }
            h.o.r3 = z >> s;
            h.o.r3 = h.o.r3 |+| (int<72>)(bit<72>)y;
            if (h.w.op == 8) {
                h.o.r3 = z |-| 72s0x7fffffffffffffffff;
            }
            h.o.r4 = y ++ h.w.op;
            h.o.r5 = x[100:61];
            h.o.r6 = h.w.d;
            h.o.r6[150:20] = (bit<131>)x;
            h.o.flags = 0;
            if (x > (bit<128>)y) { h.o.flags[0:0] = 1; }
            if (z < 0) { h.o.flags[1:1] = 1; }
            if (z >= -72s1000) { h.o.flags[2:2] = 1; }
            if (h.w.d == (bit<200>)x) { h.o.flags[3:3] = 1; }
            if ((int<100>)z < (int<100>)(int<72>)(bit<72>)y) { h.o.flags[4:4] = 1; }
            if ((bit<64>)x == 64w0) { h.o.flags[5:5] = 1; }
            if (x != 0 && (bit<32>)(x >> 96) > 5) { h.o.flags[6:6] = 1; }
            switch (x) {
                128w0x1234: { h.o.flags[7:7] = 1; }
                default: { }
            }
            m.n = (int<100>)z;
            m.n = m.n * -3;
            h.o.r3 = (int<72>)m.n;
        }
        bit<32> idx = (bit<32>)(h.w.small & 15);
        bit<128> old;
        r128.read(old, idx);
        r128.write(idx, old + x);
        bit<32> la;
        bit<32> lb;
        lo_a.read(la, idx);
        lo_b.read(lb, idx);
        lo_a.write(idx, la + (bit<32>)x);
        lo_b.write(idx, lb ^ (bit<32>)(y >> 40));
        int<80> sold;
        r80.read(sold, idx & 7);
        r80.write(idx & 7, sold - (int<80>)z);
        bit<32> hv;
        hash(hv, HashAlgorithm.crc32, 32w0, { x, y, z, h.w.d }, 32w0);
        h.eth.src = (bit<48>)hv;
        bit<128> hw;
        hash(hw, HashAlgorithm.crc16, x, { y }, (bit<128>)h.w.b | 1);
        h.eth.dst = (bit<48>)(hw >> 80) ^ (bit<48>)hw;
        if (h.w.op == 9) {
            digest<wide_digest_t>(1, { x, z, h.w.op });
        }
    }
}

control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t h, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t h) {
    apply {
        pkt.emit(h.eth);
        pkt.emit(h.w);
        pkt.emit(h.o);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
