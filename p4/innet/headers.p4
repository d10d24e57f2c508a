/* Headers and metadata of innet.p4; wire format in docs/PROTOCOL.md. */
#ifndef INNET_HEADERS_P4
#define INNET_HEADERS_P4

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP  = 0x0806;
const bit<8>  IPPROTO_UDP    = 17;
const bit<16> ARP_REQUEST    = 1;
const bit<16> ARP_REPLY      = 2;
/* UDP destination port of packets for the switch ("IN"). */
const bit<16> INNET_UDP_PORT = 0x494E;
/* TTL of packets the switch originates (RESULT, STATUS). */
const bit<8>  INNET_TTL      = 64;

/* innet msg_type values */
const bit<8>  INNET_CONTRIB  = 1;
const bit<8>  INNET_RESULT   = 2;
const bit<8>  INNET_STATUS   = 3;
/* switch -> worker: the packet's epoch is not the job's; the reply carries the job's */
const bit<8>  INNET_STALE    = 4;
/* reduce-to: workers' values, summed, go to the chunk's owner (innet_owners) only; the
 * owner's header-only REDUCE asks for the sum */
const bit<8>  INNET_REDUCE   = 5;
/* broadcast: the owner's values go to every worker; a worker's header-only BCAST asks for them */
const bit<8>  INNET_BCAST    = 6;
/* flags: bit 0 VER, bit 1 RETRANS, bit 2 HDRONLY (no values follow the header) */
const bit<8>  INNET_HDRONLY  = 0x04;
/* bytes of the K values, added to or removed from IPv4/UDP lengths */
const bit<16> INNET_VALUES_BYTES = 4 * INNET_K;
/* innet_jobs modes */
const bit<8>  INNET_MODE_SUM      = 0;
const bit<8>  INNET_MODE_SGD      = 1;
const bit<8>  INNET_MODE_MOMENTUM = 2;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

/* ARP for IPv4 over Ethernet (RFC 826). */
header arp_t {
    bit<16> htype;
    bit<16> ptype;
    bit<8>  hlen;
    bit<8>  plen;
    bit<16> oper;
    bit<48> senderMac;
    bit<32> senderIp;
    bit<48> targetMac;
    bit<32> targetIp;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length_;
    bit<16> checksum;
}

/* 24 bytes; flags bit 0 = VER (copy), bit 1 = RETRANS, bit 2 = HDRONLY (the K values are
 * absent: a request or an acknowledgement); epoch = the job incarnation of the
 * worker set (docs/PROTOCOL.md, "Epochs"). */
header innet_t {
    bit<8>  msg_type;
    bit<8>  flags;
    bit<16> job;
    bit<16> worker;
    bit<16> slot;
    bit<32> chunk;
    bit<16> count;
    bit<16> num_workers;
    bit<32> bitmap;
    bit<32> epoch;
}

/* K int32 values, two's complement: fields v0 .. v<K-1>. */
#define INNET_VALUE_FIELD(i) bit<32> v##i;
header innet_values_t {
    INNET_FOR_EACH(INNET_VALUE_FIELD)
}

struct headers {
    ethernet_t     ethernet;
    arp_t          arp;
    ipv4_t         ipv4;
    udp_t          udp;
    innet_t        innet;
    innet_values_t innet_values;
}

struct metadata {
    /* from switch_addr: the address the switch answers ARP and sends replies from */
    bit<48> switch_mac;
    bit<32> switch_ip;
    /* from innet_jobs (set_job) */
    bit<8>  mode;
    bit<8>  num_workers;
    bit<16> mcast_grp;
    bit<32> slot_base;
    bit<32> slot_count;
    bit<32> param_base;
    bit<32> param_chunks;
    bit<32> lr;
    bit<8>  lr_shift;
    bit<32> beta;
    bit<8>  beta_shift;
    bit<32> epoch;
    /* 1 on a RESULT multicast: egress addresses each replica via innet_workers */
    bit<1>  innet_mcast;
    /* msg_type of the packet that completed a multicast copy (CONTRIB, REDUCE or BCAST):
     * egress strips the values of the replicas that only acknowledge */
    bit<8>  innet_kind;
    /* from innet_owners (set_owner): the rank owning the chunk, its copy's multicast group */
    bit<8>  owner_rank;
    bit<16> owner_grp;
}

#endif
