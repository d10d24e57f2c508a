/*
 * Ingress of innet.p4: IPv4 forwarding, ARP responder, and the aggregation / in-network
 * optimizer for packets addressed to the switch (docs/PROTOCOL.md, "Switch behaviour").
 */

/*
 * (f * b) >> shift with f an int<64> factor (lr or beta, sign-extended once per packet) and
 * b a bit<32> holding an int32: int64 product, arithmetic (floor) shift by a bit<8>, int32
 * wrap. A macro rather than a P4 function: it runs 2 * K times on a momentum completion
 * and the executor inlines it this way.
 */
#define INNET_FIXMUL(f, b, shift) \
    ((bit<32>)(bit<64>)(((f) * (int<64>)(int<32>)(b)) >> (shift)))

/* Per-element state: accumulator of each slot copy; parameter and momentum per chunk. */
#define INNET_ELEMENT_REGISTERS(i) \
    register<bit<32>>(INNET_COPIES) innet_acc_##i; \
    register<bit<32>>(INNET_PARAM_CHUNKS) innet_param_##i; \
    register<bit<32>>(INNET_PARAM_CHUNKS) innet_mom_##i;

/* Value i of the packet. */
#define INNET_V(i) hdr.innet_values.v##i

/* Retransmission of a finished chunk: the stored result into the packet. */
#define INNET_LOAD_RESULT(i) innet_acc_##i.read(INNET_V(i), idx);

/* The copy's partial sum plus this contribution, into the packet. */
#define INNET_ADD_PARTIAL(i) innet_acc_##i.read(acc, idx); INNET_V(i) = INNET_V(i) + acc;

/* The packet's value (partial sum, or the result once complete) into the copy. */
#define INNET_STORE(i) innet_acc_##i.write(idx, INNET_V(i));

/* A header-only request contributes nothing: zeros in its (just added) values. */
#define INNET_ZERO(i) INNET_V(i) = 0;

/* sgd: w = w - ((lr * g) >> lr_shift); the packet carries w. */
#define INNET_SGD_STEP(i) \
    innet_param_##i.read(w, p); \
    w = w - INNET_FIXMUL(lr, INNET_V(i), meta.lr_shift); \
    innet_param_##i.write(p, w); \
    INNET_V(i) = w;

/* momentum: m = ((beta * m) >> beta_shift) + g; w = w - ((lr * m) >> lr_shift). */
#define INNET_MOMENTUM_STEP(i) \
    innet_mom_##i.read(m, p); \
    m = INNET_FIXMUL(beta, m, meta.beta_shift) + INNET_V(i); \
    innet_mom_##i.write(p, m); \
    innet_param_##i.read(w, p); \
    w = w - INNET_FIXMUL(lr, m, meta.lr_shift); \
    innet_param_##i.write(p, w); \
    INNET_V(i) = w;

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    /* Per slot copy (cell 2 * (slot_base + slot) + VER): workers seen, contributions. */
    register<bit<32>>(INNET_COPIES) innet_bitmap;
    register<bit<8>>(INNET_COPIES) innet_count;
    /* Per slot copy: the job epoch its bitmap, count and accumulators belong to; a copy of
     * an earlier epoch is empty for the current one. */
    register<bit<32>>(INNET_COPIES) innet_epoch;
    INNET_FOR_EACH(INNET_ELEMENT_REGISTERS)

    /* Indexed by job id (0 also counts drops of unknown jobs). */
    counter(INNET_MAX_JOBS, CounterType.packets) innet_contributions;
    counter(INNET_MAX_JOBS, CounterType.packets) innet_completions;
    counter(INNET_MAX_JOBS, CounterType.packets) innet_duplicates;
    counter(INNET_MAX_JOBS, CounterType.packets) innet_drops;
    counter(INNET_MAX_JOBS, CounterType.packets) innet_stale;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    /* ---------------------------------------------------------------- switch address */
    action set_switch_addr(bit<48> mac, bit<32> ip) {
        meta.switch_mac = mac;
        meta.switch_ip = ip;
    }

    table switch_addr {
        actions = { set_switch_addr; }
        default_action = set_switch_addr(0, 0);
    }

    /* ---------------------------------------------------------------- IPv4, ARP */
    action ipv4_forward(bit<48> mac, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; drop; }
        default_action = drop();
        size = 1024;
    }

    /* Answer an ARP request for targetIp with `mac`, back out of the ingress port. */
    action arp_reply(bit<48> mac) {
        bit<32> ip = hdr.arp.targetIp;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = mac;
        hdr.arp.oper = ARP_REPLY;
        hdr.arp.targetMac = hdr.arp.senderMac;
        hdr.arp.targetIp = hdr.arp.senderIp;
        hdr.arp.senderMac = mac;
        hdr.arp.senderIp = ip;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }

    /* The switch's own address (switch_addr) when arp_responder has no entry. A separate action,
     * not a direct call of arp_reply: p4c would emit a second, parameterless BMv2 action named
     * MyIngress.arp_reply for that call, and simple_switch_CLI, which finds actions by name,
     * then refuses arp_responder's entries (the table misses; the request goes unanswered). */
    action arp_reply_switch() {
        arp_reply(meta.switch_mac);
    }

    table arp_responder {
        key = { hdr.arp.targetIp: exact; }
        actions = { arp_reply; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    /* ---------------------------------------------------------------- innet */
    action set_job(bit<8> mode, bit<8> num_workers, bit<16> mcast_grp,
                   bit<32> slot_base, bit<32> slot_count,
                   bit<32> param_base, bit<32> param_chunks,
                   bit<32> lr, bit<8> lr_shift, bit<32> beta, bit<8> beta_shift,
                   bit<32> epoch) {
        meta.mode = mode;
        meta.num_workers = num_workers;
        meta.mcast_grp = mcast_grp;
        meta.slot_base = slot_base;
        meta.slot_count = slot_count;
        meta.param_base = param_base;
        meta.param_chunks = param_chunks;
        meta.lr = lr;
        meta.lr_shift = lr_shift;
        meta.beta = beta;
        meta.beta_shift = beta_shift;
        meta.epoch = epoch;
    }

    table innet_jobs {
        key = { hdr.innet.job: exact; }
        actions = { set_job; NoAction; }
        default_action = NoAction();
        size = INNET_MAX_JOBS;
    }

    /* Owner of a chunk range of a job, for REDUCE and BCAST (reduce-to and broadcast):
     * its rank (a member outside 0..num_workers-1) and the multicast group of the job's
     * workers plus that owner. A range is installed as its aligned prefixes. */
    action set_owner(bit<8> rank, bit<16> mcast_grp) {
        meta.owner_rank = rank;
        meta.owner_grp = mcast_grp;
    }

    table innet_owners {
        key = {
            hdr.innet.job: exact;
            hdr.innet.chunk: lpm;
        }
        actions = { set_owner; NoAction; }
        default_action = NoAction();
        size = INNET_OWNER_ENTRIES;
    }

    /* A header-only packet gets room for the K values (written by the caller). */
    action innet_values_on() {
        hdr.innet_values.setValid();
        hdr.innet.flags = hdr.innet.flags & ~INNET_HDRONLY;
        hdr.ipv4.totalLen = hdr.ipv4.totalLen + INNET_VALUES_BYTES;
        hdr.udp.length_ = hdr.udp.length_ + INNET_VALUES_BYTES;
    }

    /* The values are dropped: the packet becomes a header-only acknowledgement. */
    action innet_values_off() {
        hdr.innet_values.setInvalid();
        hdr.innet.flags = hdr.innet.flags | INNET_HDRONLY;
        hdr.ipv4.totalLen = hdr.ipv4.totalLen - INNET_VALUES_BYTES;
        hdr.udp.length_ = hdr.udp.length_ - INNET_VALUES_BYTES;
    }

    /* A RESULT or STATUS back to the sender only (addresses and UDP ports swapped). */
    action innet_unicast_reply(bit<8> msg_type, bit<32> bitmap) {
        hdr.innet.msg_type = msg_type;
        hdr.innet.num_workers = (bit<16>)meta.num_workers;
        hdr.innet.bitmap = bitmap;
        bit<48> mac = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = mac;
        bit<32> ip = hdr.ipv4.dstAddr;
        hdr.ipv4.dstAddr = hdr.ipv4.srcAddr;
        hdr.ipv4.srcAddr = ip;
        hdr.ipv4.ttl = INNET_TTL;
        bit<16> port = hdr.udp.dstPort;
        hdr.udp.dstPort = hdr.udp.srcPort;
        hdr.udp.srcPort = port;
        hdr.udp.checksum = 0;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }

    apply {
        switch_addr.apply();
        if (hdr.innet.isValid() && hdr.ipv4.dstAddr == meta.switch_ip) {
            bit<32> job = (bit<32>)hdr.innet.job;
            bool known = innet_jobs.apply().hit;
            /* REDUCE/BCAST copies have the job's workers and the chunk's owner as members */
            bool owner_op = hdr.innet.msg_type == INNET_REDUCE || hdr.innet.msg_type == INNET_BCAST;
            bool owned = false;
            if (known && owner_op) {
                owned = innet_owners.apply().hit;
            }
            bool is_owner = owned && hdr.innet.worker == (bit<16>)meta.owner_rank;
            /* who carries values: CONTRIB always; REDUCE the workers; BCAST the owner */
            bool sends_values = hdr.innet.msg_type == INNET_CONTRIB
                                || (hdr.innet.msg_type == INNET_REDUCE && !is_owner)
                                || (hdr.innet.msg_type == INNET_BCAST && is_owner);
            bool hdr_only = (hdr.innet.flags & INNET_HDRONLY) != 0;
            if (!known || hdr.innet.job >= INNET_MAX_JOBS) {
                innet_drops.count(0);
                drop();
            } else if ((hdr.innet.msg_type != INNET_CONTRIB && !owner_op)
                       || (owner_op && (!owned || meta.mode != INNET_MODE_SUM))
                       /* data without values, or a request with values */
                       || (hdr_only && sends_values) || (!hdr_only && !sends_values)
                       || (sends_values && !hdr.innet_values.isValid())  /* cut short: fewer than K values */
                       || (hdr.innet.worker >= (bit<16>)meta.num_workers && !is_owner)
                       || (bit<32>)hdr.innet.slot >= meta.slot_count
                       || (meta.mode != INNET_MODE_SUM && hdr.innet.chunk >= meta.param_chunks)) {
                innet_drops.count(job);
                drop();
            } else if (hdr.innet.epoch != meta.epoch) {
                /* a worker set of another incarnation of the job: tell it the current one */
                innet_stale.count(job);
                hdr.innet.epoch = meta.epoch;
                innet_unicast_reply(INNET_STALE, 0);
            } else {
                bit<32> idx = ((meta.slot_base + (bit<32>)hdr.innet.slot) << 1)
                              | (bit<32>)hdr.innet.flags[0:0];
                bit<32> wbit = 32w1 << (bit<8>)hdr.innet.worker;
                /* contributions that complete the copy: the workers, plus the owner */
                bit<8> members = meta.num_workers;
                if (owner_op) {
                    members = members + 1;
                }
                bit<32> bitmap;
                bit<8> count;
                innet_bitmap.read(bitmap, idx);
                innet_count.read(count, idx);
                bit<32> copy_epoch;
                innet_epoch.read(copy_epoch, idx);
                if (copy_epoch != meta.epoch) {
                    /* left by an earlier worker set: nothing in it counts now */
                    bitmap = 0;
                    count = 0;
                }
                if ((bitmap & wbit) != 0) {
                    /* duplicate: never counted twice */
                    innet_duplicates.count(job);
                    if (count == members) {
                        if (owner_op && sends_values) {
                            /* it only needs to know the copy is complete */
                            innet_values_off();
                        } else {
                            if (hdr_only) {
                                innet_values_on();
                            }
                            INNET_FOR_EACH(INNET_LOAD_RESULT)
                        }
                        innet_unicast_reply(INNET_RESULT, bitmap);
                    } else if (hdr.innet.flags[1:1] == 1) {
                        innet_unicast_reply(INNET_STATUS, bitmap);
                    } else {
                        drop();
                    }
                } else {
                    innet_contributions.count(job);
                    if (hdr_only) {
                        innet_values_on();
                        INNET_FOR_EACH(INNET_ZERO)
                    }
                    /* the worker has moved on from the other copy */
                    bit<32> other;
                    innet_bitmap.read(other, idx ^ 1);
                    innet_bitmap.write(idx ^ 1, other & ~wbit);
                    if (count == 0 || count == members) {
                        /* fresh use of the copy: the packet's values are the partial sum */
                        count = 1;
                        bitmap = wbit;
                    } else {
                        bit<32> acc;
                        INNET_FOR_EACH(INNET_ADD_PARTIAL)
                        count = count + 1;
                        bitmap = bitmap | wbit;
                    }
                    innet_count.write(idx, count);
                    innet_bitmap.write(idx, bitmap);
                    innet_epoch.write(idx, meta.epoch);
                    if (count == members) {
                        innet_completions.count(job);
                        bit<32> p = meta.param_base + hdr.innet.chunk;
                        bit<32> w;
                        bit<32> m;
                        int<64> lr = (int<64>)(int<32>)meta.lr;
                        int<64> beta = (int<64>)(int<32>)meta.beta;
                        if (meta.mode == INNET_MODE_SGD) {
                            INNET_FOR_EACH(INNET_SGD_STEP)
                        } else if (meta.mode == INNET_MODE_MOMENTUM) {
                            INNET_FOR_EACH(INNET_MOMENTUM_STEP)
                        }
                        meta.innet_kind = hdr.innet.msg_type;
                        hdr.innet.msg_type = INNET_RESULT;
                        hdr.innet.num_workers = (bit<16>)meta.num_workers;
                        hdr.innet.bitmap = bitmap;
                        if (owner_op) {
                            standard_metadata.mcast_grp = meta.owner_grp;
                        } else {
                            standard_metadata.mcast_grp = meta.mcast_grp;
                        }
                        meta.innet_mcast = 1;
                    } else {
                        drop();
                    }
                    INNET_FOR_EACH(INNET_STORE)
                }
            }
        } else if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
        } else if (hdr.arp.isValid() && hdr.arp.oper == ARP_REQUEST) {
            if (arp_responder.apply().miss) {
                if (meta.switch_ip != 0 && hdr.arp.targetIp == meta.switch_ip) {
                    arp_reply_switch();
                } else {
                    drop();
                }
            }
        } else {
            drop();
        }
    }
}
