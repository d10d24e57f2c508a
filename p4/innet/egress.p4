/* Egress: address each replica of a RESULT multicast to its worker (or owner); a replica
 * that only acknowledges (REDUCE: the workers'; BCAST: the owner's) loses the values. */
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

    /* The replica becomes a header-only acknowledgement. */
    action strip_values() {
        hdr.innet_values.setInvalid();
        hdr.innet.flags = hdr.innet.flags | INNET_HDRONLY;
        hdr.ipv4.totalLen = hdr.ipv4.totalLen - INNET_VALUES_BYTES;
        hdr.udp.length_ = hdr.udp.length_ - INNET_VALUES_BYTES;
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
            if (meta.innet_kind != INNET_CONTRIB) {
                /* the owner receives a REDUCE's sum, the workers a BCAST's values */
                bool to_owner = standard_metadata.egress_rid == (bit<16>)meta.owner_rank;
                if ((meta.innet_kind == INNET_REDUCE && !to_owner) || (meta.innet_kind == INNET_BCAST && to_owner)) {
                    strip_values();
                }
            }
            innet_workers.apply();
        }
    }
}
