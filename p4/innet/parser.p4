/* Ethernet -> ARP | IPv4 -> UDP -> (dst port 18766) innet header + K values (none with
 * HDRONLY: a REDUCE/BCAST request or acknowledgement). */
parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }
    state parse_arp {
        packet.extract(hdr.arp);
        transition accept;
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            IPPROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            INNET_UDP_PORT: parse_innet;
            default: accept;
        }
    }
    state parse_innet {
        packet.extract(hdr.innet);
        transition select(hdr.innet.flags) {
            INNET_HDRONLY &&& INNET_HDRONLY: accept;
            default: parse_innet_values;
        }
    }
    state parse_innet_values {
        packet.extract(hdr.innet_values);
        transition accept;
    }
}
