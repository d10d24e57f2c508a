#include <core.p4>
#include <v1model.p4>

// enum bit<16> as a header field type, parser select on enum members, values that name no
// member, casts of the enum to bit<16>, and enum comparison in a control.
enum bit<16> EtherType { IPV4 = 0x0800, VLAN = 0x8100, ARP = 0x0806 }

header eth_t  { bit<8> dst; EtherType etype; }
header vlan_t { bit<16> tci; EtherType etype; }
header ip_t   { bit<8> proto; }
header o_t    { bit<8> kind; bit<16> inner; }
struct headers_t { o_t o; eth_t eth; vlan_t vlan; ip_t ip; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.eth);
        transition select(h.eth.etype) {
            EtherType.VLAN: parse_vlan;
            EtherType.IPV4: parse_ip;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(h.vlan);
        transition select(h.vlan.etype) { EtherType.IPV4: parse_ip; default: accept; }
    }
    state parse_ip { pkt.extract(h.ip); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        if (h.ip.isValid()) { h.o.kind = 4; }
        else if (h.eth.etype == EtherType.ARP) { h.o.kind = 6; }
        else { h.o.kind = 0; }
        h.o.inner = h.vlan.isValid() ? (bit<16>)h.vlan.etype : (bit<16>)h.eth.etype;
    }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) {
    apply { pkt.emit(h.o); pkt.emit(h.eth); pkt.emit(h.vlan); pkt.emit(h.ip); }
}

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
