#include <core.p4>
#include <v1model.p4>

// Two-argument extract into headers with a varbit field between fixed fields: the size (in
// bits) comes from an earlier header. The emitted header has the extracted width. Two varbit
// values are equal when their numbers are, whatever their widths (simple_switch's ==). csum16 over a field list with a varbit
// covers its current bytes. Errors in simple_switch's order (BMv2 parser.cpp, extract_VL):
// a size that is not a multiple of 8 is ParserInvalidArgument, then too few bytes left is
// PacketTooShort, then a size above the varbit's maximum is HeaderTooShort.
header base_t { bit<8> n1; bit<8> n2; }
header opt_t { bit<4> hi; bit<4> lo; varbit<24> data; bit<8> tail; }
header r_t { bit<8> code; bit<8> eq; bit<16> csum; }
struct headers_t { r_t r; base_t b; opt_t o1; opt_t o2; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.b);
        pkt.extract(h.o1, (bit<32>)h.b.n1);
        pkt.extract(h.o2, (bit<32>)h.b.n2);
        transition accept;
    }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.r.setValid();
        h.r.csum = 0;
        if (sm.parser_error == error.NoError) { h.r.code = 0; }
        else if (sm.parser_error == error.PacketTooShort) { h.r.code = 1; }
        else if (sm.parser_error == error.HeaderTooShort) { h.r.code = 4; }
        else if (sm.parser_error == error.ParserInvalidArgument) { h.r.code = 6; }
        else { h.r.code = 0xee; }
        if (h.o1.isValid() && h.o2.isValid()) {
            h.r.eq = (h.o1.data == h.o2.data) ? 8w1 : 8w0;
        } else {
            h.r.eq = 0xff;
        }
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) {
    apply {
        update_checksum(h.o1.isValid(), { h.o1.hi, h.o1.lo, h.o1.data, h.o1.tail }, h.r.csum,
                        HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers_t h) {
    apply { pkt.emit(h.r); pkt.emit(h.b); pkt.emit(h.o1); pkt.emit(h.o2); }
}

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
