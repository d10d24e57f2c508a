/* Target of the P4Runtime fuzz tests: one v1model program with every entity kind the
 * server knows (exact/lpm/ternary/range/optional tables, exact + lpm keys as innet.p4's
 * innet_owners (job, chunk prefix), const entries, idle timeout,
 * direct counter and meter, action profile and selector, counter, meter, register,
 * digest, multicast and clone sessions, packet I/O on CPU port 255). */
#include <core.p4>
#include <v1model.p4>

@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> _pad; bit<16> tag; }
@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> _pad; }
header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
struct headers_t { packet_out_t packet_out; packet_in_t packet_in; ethernet_t eth; ipv4_t ipv4; }
struct learn_t { bit<48> src; bit<9> port; }
struct meta_t { bit<8> color; bit<16> sel; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) { 255: parse_packet_out; default: parse_eth; }
    }
    state parse_packet_out { pkt.extract(h.packet_out); transition parse_eth; }
    state parse_eth {
        pkt.extract(h.eth);
        transition select(h.eth.type) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { pkt.extract(h.ipv4); transition accept; }
}

control VC(inout headers_t h, inout meta_t m) { apply { } }

control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    counter(64, CounterType.packets_and_bytes) port_counter;
    meter(16, MeterType.packets) port_meter;
    register<bit<32>>(32) seen;
    direct_counter(CounterType.packets) exact_hits;
    direct_meter<bit<8>>(MeterType.bytes) acl_meter;

    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action set_mac(bit<48> mac, bit<9> port) { h.eth.dst = mac; sm.egress_spec = port; }
    action flood(bit<16> grp) { sm.mcast_grp = grp; }
    action to_cpu() { sm.egress_spec = 255; }
    action mirror(bit<32> session) { clone(CloneType.I2E, session); }
    action count_fwd(bit<9> port) { exact_hits.count(); sm.egress_spec = port; }
    action meter_fwd(bit<9> port) { acl_meter.read(m.color); sm.egress_spec = port; }
    action learn() { digest<learn_t>(1, { h.eth.src, sm.ingress_port }); }

    table l2 {
        key = { h.eth.dst: exact; }
        actions = { count_fwd; flood; to_cpu; NoAction; }
        counters = exact_hits;
        default_action = NoAction();
        size = 64;
    }
    table routes {
        key = { h.ipv4.dst: lpm; }
        actions = { set_mac; drop; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    /* the shape of innet.p4's innet_owners: an exact key and an lpm key */
    table owners {
        key = { h.ipv4.proto: exact; h.ipv4.dst: lpm; }
        actions = { flood; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    table acl {
        key = { h.ipv4.src: ternary; h.ipv4.proto: ternary; }
        actions = { meter_fwd; drop; mirror; NoAction; }
        meters = acl_meter;
        default_action = NoAction();
        size = 32;
    }
    table ports {
        key = { sm.ingress_port: range; h.eth.type: optional; }
        actions = { fwd; drop; NoAction; }
        default_action = NoAction();
    }
    table fixed {
        key = { h.eth.type: exact; }
        actions = { fwd; NoAction; }
        const entries = { 0x88cc: fwd(9); }
        default_action = NoAction();
    }
    table learned {
        key = { h.eth.src: exact; }
        actions = { learn; NoAction; }
        default_action = learn();
        support_timeout = true;
    }
    action_profile(8) prof;
    table by_profile {
        key = { h.eth.type: exact; }
        actions = { fwd; set_mac; }
        implementation = prof;
    }
    @max_group_size(4)
    action_selector(HashAlgorithm.crc16, 16, 16) sel;
    table by_selector {
        key = { h.ipv4.proto: exact; h.ipv4.src: selector; }
        actions = { fwd; drop; }
        implementation = sel;
    }

    apply {
        if (h.packet_out.isValid()) {
            sm.egress_spec = h.packet_out.egress_port;
            h.packet_out.setInvalid();
            return;
        }
        port_counter.count((bit<32>)sm.ingress_port);
        port_meter.execute_meter((bit<32>)sm.ingress_port, m.color);
        bit<32> n;
        seen.read(n, (bit<32>)sm.ingress_port);
        seen.write((bit<32>)sm.ingress_port, n + 1);
        learned.apply();
        fixed.apply();
        ports.apply();
        l2.apply();
        if (h.ipv4.isValid()) {
            routes.apply();
            owners.apply();
            acl.apply();
            by_profile.apply();
            by_selector.apply();
        }
    }
}

control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == 255) {
            h.packet_in.setValid();
            h.packet_in.ingress_port = sm.ingress_port;
            h.packet_in._pad = 0;
        }
    }
}

control CC(inout headers_t h, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t h) {
    apply { pkt.emit(h.packet_in); pkt.emit(h.eth); pkt.emit(h.ipv4); }
}

V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
