"""InnetTarget device-config recognition (the rest is covered end to end in integration)."""

import pytest

from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.p4runtime.target_api import TargetError


def test_bmv2_json_is_rejected_by_name():
    bmv2 = b'{"header_types": [], "headers": [], "pipelines": [{"name": "ingress"}]}'
    with pytest.raises(TargetError, match=r"BMv2 JSON \(p4c-bm2-ss output\).*innet-p4c"):
        InnetTarget().load(None, bmv2)


def test_other_json_names_the_expected_format():
    with pytest.raises(TargetError, match="innet-device-config/1"):
        InnetTarget().load(None, b'{"format": "something-else"}')


def test_binary_garbage_is_neither_config_nor_source():
    with pytest.raises(TargetError, match="neither an innet device config"):
        InnetTarget().load(None, b"\xff\xfe\x00binary")


CONST_PROGRAM = b"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action other() { }
    table fixed {
        key = { h.h.k: exact; }
        actions = { fwd; other; }
        const entries = { 1: fwd(9); }
        default_action = other();
    }
    apply { fixed.apply(); }
}
control Egr(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
"""


@pytest.mark.parametrize("action", ["Ing.fwd", "Ing.other"])
def test_p4info_without_an_action_the_program_runs_is_rejected(action: str) -> None:
    """Found by tests/fuzz/test_fuzz_p4runtime.py (a mutated P4Info in
    SetForwardingPipelineConfig): a P4Info lacking the action of a const entry or of a
    default action passed the check and the commit answered INTERNAL."""
    info = InnetTarget().load(None, CONST_PROGRAM).p4info
    gone = next(a for a in info.actions if a.preamble.name == action)
    info.actions.remove(gone)
    with pytest.raises(TargetError, match=rf"P4Info table 'Ing.fixed': action_refs references id {gone.preamble.id:#x}, "
                                          "which the P4Info does not declare"):
        InnetTarget().load(info, CONST_PROGRAM)
