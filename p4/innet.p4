/*
 * innet: in-network aggregation with an in-network optimizer (v1model).
 *
 * Workers send CONTRIB packets (UDP port 18766, innet header + INNET_K int32 values) to
 * the switch's address. The switch sums each chunk over the job's workers in a slot copy,
 * applies the job's mode (sum, sgd, momentum) to its stored parameters on the last
 * contribution, and multicasts the RESULT to every worker. Loss recovery follows SwitchML:
 * per-copy worker bitmaps make duplicates harmless, two copies per slot (VER bit) keep a
 * finished result for retransmissions. Everything else is IPv4 forwarding and ARP.
 * Contract: docs/PROTOCOL.md. Sizes: innet/config.p4.
 */
#include <core.p4>
#include <v1model.p4>

#include "innet/config.p4"
#include "innet/repeat.p4"
#include "innet/headers.p4"
#include "innet/parser.p4"
#include "innet/ingress.p4"
#include "innet/egress.p4"
#include "innet/deparser.p4"

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
