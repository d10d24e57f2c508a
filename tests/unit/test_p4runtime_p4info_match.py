"""SetForwardingPipelineConfig refuses a P4Info that does not describe the program it is
pushed with: widths, match kinds, sizes, references (otherwise
a register claimed 100,000 bits wide would accept a 21-byte write and read it back
truncated)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import grpc
import pytest
from finsy.proto import p4i, p4r

from innet.switch.device_config import build
from innet.switch.p4runtime.device import Device
from innet.switch.p4runtime.errors import P4RuntimeError
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.p4runtime.target_api import TargetError

PROGRAM = Path(__file__).parent.parent / "data" / "p4info_match.p4"
Set = p4r.SetForwardingPipelineConfigRequest


@pytest.fixture(scope="module")
def built():
    return build(PROGRAM, ())


def by_name(objects, name: str):
    (found,) = [o for o in objects if o.preamble.name == name]
    return found


def mutated(built, change: Callable[[p4i.P4Info], None]) -> p4i.P4Info:
    info = p4i.P4Info()
    info.CopyFrom(built.p4info)
    change(info)
    return info


def test_the_programs_own_p4info_and_a_subset_are_accepted(built):
    target = InnetTarget()
    target.load(built.p4info, built.config.to_bytes())
    subset = mutated(built, lambda i: i.ClearField("meters"))
    target.load(subset, built.config.to_bytes())


def set_field(objects: str, name: str, path: str, value) -> Callable[[p4i.P4Info], None]:
    def change(info: p4i.P4Info) -> None:
        obj = by_name(getattr(info, objects), name)
        *parents, last = path.split(".")
        for part in parents:
            obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
        setattr(obj, last, value)
    return change


CASES = [
    (set_field("registers", "Ing.regs", "type_spec.bitstring.bit.bitwidth", 100_000),
     r"register 'Ing.regs': type_spec .*bitwidth: 100000.* differs from the program's .*bitwidth: 32"),
    (set_field("registers", "Ing.regs", "size", 17), r"register 'Ing.regs': size 17 differs from the program's 16"),
    (set_field("actions", "Ing.fwd", "params.0.bitwidth", 16),
     r"action 'Ing.fwd': param 'port' bitwidth 16 differs from the program's 9"),
    (set_field("actions", "Ing.fwd", "params.1.name", "dmac"),
     r"action 'Ing.fwd': param 2 name 'dmac' differs from the program's 'mac'"),
    (set_field("tables", "Ing.t", "match_fields.0.bitwidth", 32),
     r"table 'Ing.t': match field 'hdr.eth.dst' bitwidth 32 differs from the program's 48"),
    (set_field("tables", "Ing.t", "match_fields.1.match_type", p4i.MatchField.EXACT),
     r"table 'Ing.t': match field 'hdr.eth.type' match_type 'EXACT' differs from the program's 'TERNARY'"),
    (set_field("tables", "Ing.t", "size", 4096), r"table 'Ing.t': size 4096 differs from the program's 64"),
    (set_field("counters", "Ing.pkts", "size", 9), r"counter 'Ing.pkts': size 9 differs from the program's 8"),
    (set_field("counters", "Ing.pkts", "spec.unit", p4i.CounterSpec.BYTES),
     r"counter 'Ing.pkts': unit 'BYTES' differs from the program's 'PACKETS'"),
    (set_field("meters", "Ing.rate", "size", 400), r"meter 'Ing.rate': size 400 differs from the program's 4"),
    (set_field("registers", "Ing.regs", "preamble.name", "Ing.nothing"),
     r"register 'Ing.nothing' does not exist in the program"),
    (set_field("tables", "Ing.t", "action_refs.0.id", 0x01ABCDEF),
     r"table 'Ing.t': action_refs references id 0x1abcdef, which the P4Info does not declare"),
    (set_field("registers", "Ing.regs", "preamble.id", 21257015),
     r"register 'Ing.regs': id 0x1445b37 is also the id of action 'NoAction'"),
]


@pytest.mark.parametrize("change,message", CASES)
def test_mismatch_names_object_field_and_both_values(built, change, message):
    with pytest.raises(TargetError, match=message):
        InnetTarget().load(mutated(built, change), built.config.to_bytes())


def test_device_answers_invalid_argument_and_keeps_no_pipeline(built):
    device = Device(1, InnetTarget())
    config = p4r.ForwardingPipelineConfig(p4_device_config=built.config.to_bytes())
    config.p4info.CopyFrom(mutated(built, CASES[0][0]))
    with pytest.raises(P4RuntimeError, match=r"register 'Ing.regs': type_spec") as info:
        device.set_pipeline(Set.VERIFY_AND_COMMIT, config)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert not device.has_pipeline
