/* Egress: address each replica of a RESULT multicast to its worker. */
control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    /* Replica rid = worker rank: send it from the switch's address to the worker's. */
    action set_worker(bit<48> mac, bit<32> ip, bit<16> udp_port) {
        hdr.ethernet.dstAddr = mac;
        hdr.ethernet.srcAddr = meta.switch_mac;
        hdr.ipv4.dstAddr = ip;
        hdr.ipv4.srcAddr = meta.switch_ip;
        hdr.ipv4.ttl = INNET_TTL;
        hdr.udp.dstPort = udp_port;
        hdr.udp.srcPort = INNET_UDP_PORT;
        hdr.udp.checksum = 0;
    }

    table innet_workers {
        key = {
            hdr.innet.job: exact;
            standard_metadata.egress_rid: exact;
        }
        actions = { set_worker; drop; }
        default_action = drop();
        size = 32 * INNET_MAX_JOBS;
    }

    apply {
        if (meta.innet_mcast == 1) {
            innet_workers.apply();
        }
    }
}
