"""Digests the native executor queues for several packets of one batch all reach the
controller side, in order (regression: the queue was parsed up to its first message only,
so a C port loop that ran two learning packets before the controller thread drained the
queue lost the second)."""

from __future__ import annotations

import pytest

from innet.native_build import compiler_path
from innet.switch.frontend import compile_source

pytestmark = pytest.mark.skipif(compiler_path() is None, reason="native executor needs a C compiler (cc/gcc)")

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct headers { ethernet_t ethernet; }
struct learn_t { bit<48> srcAddr; bit<9> port; bit<100> wide; }
struct metadata { }
parser P(packet_in p, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start { p.extract(h.ethernet); transition accept; }
}
control V(inout headers h, inout metadata m) { apply { } }
control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply {
        digest<learn_t>(1, { h.ethernet.srcAddr, sm.ingress_port, (bit<100>)h.ethernet.srcAddr << 60 });
        sm.egress_spec = sm.ingress_port;
    }
}
control E(inout headers h, inout metadata m, inout standard_metadata_t sm) { apply { } }
control C(inout headers h, inout metadata m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.ethernet); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_every_digest_of_a_batch_is_delivered() -> None:
    from innet.switch.native.pipeline import NativePipeline

    pipeline = NativePipeline(compile_source(PROGRAM))
    macs = [0x0A0000000001 + i for i in range(5)]
    frames = [(3, bytes(6) + mac.to_bytes(6, "big") + b"\x08\x00") for mac in macs]
    assert len(pipeline.process_many(frames)) == 5
    got = [(m.fields["srcAddr"], m.fields["port"], m.fields["wide"]) for m in pipeline.pop_digests()]
    assert got == [(mac, 3, (mac << 60) & ((1 << 100) - 1)) for mac in macs]
