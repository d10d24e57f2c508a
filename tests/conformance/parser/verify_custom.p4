#include <core.p4>
#include <v1model.p4>

// Several user-defined errors raised by verify(); parsing stops at the failing verify
// (metadata written after it keeps its old value), headers extracted before it stay valid.
// Each checkpoint writes its own metadata field. With one field written twice in a state
// (stage = 1; verify(..); stage = 2;) p4c deletes the first write as a dead store, since its
// def-use analysis does not treat a failing verify as a way out of the state, so on BMv2 the
// packet failing the middle verify showed stage 0. Separate fields keep every write live.
error { BadVer, BadLen, BadFlag }

header h_t { bit<8> ver; bit<8> len; bit<8> flag; }
header x_t { bit<8> x; }
header o_t { bit<8> code; bit<8> stage; bit<8> xvalid; }
struct headers_t { o_t o; h_t h; x_t x; }
struct meta_t { bit<8> s1; bit<8> s2; bit<8> s3; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.h);
        verify(h.h.ver == 4, error.BadVer);
        m.s1 = 1;
        verify(h.h.len >= 2, error.BadLen);
        m.s2 = 1;
        transition select(h.h.flag) {
            0: accept;
            default: check_flag;
        }
    }
    state check_flag {
        verify(h.h.flag < 4, error.BadFlag);
        pkt.extract(h.x);
        m.s3 = 1;
        transition accept;
    }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        if (sm.parser_error == error.NoError) { h.o.code = 0; }
        else if (sm.parser_error == error.PacketTooShort) { h.o.code = 1; }
        else if (sm.parser_error == error.BadVer) { h.o.code = 7; }
        else if (sm.parser_error == error.BadLen) { h.o.code = 8; }
        else if (sm.parser_error == error.BadFlag) { h.o.code = 9; }
        else { h.o.code = 0xff; }
        h.o.stage = m.s1 + m.s2 + m.s3;  // checkpoints passed
        h.o.xvalid = h.x.isValid() ? 8w1 : 8w0;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.o); pkt.emit(h.h); pkt.emit(h.x); } }

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
