"""Register transport decided before the first register operation: on a switch
known or found not to support RegisterEntry (BMv2), no register update is ever sent over
P4Runtime, so a job's 1056-cell batch cannot overflow gRPC metadata with per-update errors."""

from __future__ import annotations

import grpc
import pytest
from finsy.proto import p4i, p4r

from innet.controller.errors import ControllerError, UnimplementedError
from innet.controller.schema import P4Schema
from innet.controller.switch import Switch, SwitchEndpoint

REG_ID = 0x16000001
REG = "MyIngress.innet_param_0"
SIZE = 2048


def _schema() -> P4Schema:
    info = p4i.P4Info()
    reg = info.registers.add()
    reg.preamble.id, reg.preamble.name = REG_ID, REG
    reg.size = SIZE
    reg.type_spec.bitstring.bit.bitwidth = 32
    return P4Schema(info)


class Bmv2Client:
    """P4Runtime as BMv2 answers it: RegisterEntry reads UNIMPLEMENTED; records every RPC."""

    def __init__(self) -> None:
        self.reads: list[list[p4r.Entity]] = []
        self.writes: list[list[p4r.Update]] = []

    def read(self, entities):
        entities = list(entities)
        self.reads.append(entities)
        if any(e.HasField("register_entry") for e in entities):
            raise UnimplementedError("read on switch x: UNIMPLEMENTED: RegisterEntry", grpc.StatusCode.UNIMPLEMENTED)
        return []

    def write(self, updates, describe=None, single_request=False):
        self.writes.append(list(updates))


class RecordingCli:
    def __init__(self) -> None:
        self.sessions: list[str] = []

    def __call__(self, argv: list[str], stdin: str) -> str:
        self.sessions.append(stdin)
        return "Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table manipulation\nRuntimeCmd: \n"


def _switch(**spec) -> tuple[Switch, Bmv2Client, RecordingCli]:
    cli = RecordingCli()
    sw = Switch(SwitchEndpoint("s1", "127.0.0.1:9559", **spec), runner=cli)
    fake = Bmv2Client()
    sw.client = fake  # type: ignore[assignment]
    sw._use(_schema())
    return sw, fake, cli


CELLS = [(i, i * 3) for i in range(1056)]


def test_thrift_transport_never_sends_register_entries():
    sw, fake, cli = _switch(thrift_port=9090, registers="thrift")
    sw.write_registers({REG: CELLS})
    assert fake.writes == [] and fake.reads == []
    assert len(cli.sessions) == 1 and cli.sessions[0].count("register_write") == 1056


def test_auto_with_thrift_port_probes_one_cell_then_uses_thrift():
    sw, fake, cli = _switch(thrift_port=9090)
    sw.write_registers({REG: CELLS})
    sw.write_registers({REG: CELLS[:5]})
    assert fake.writes == []
    assert len(fake.reads) == 1 and len(fake.reads[0]) == 1  # one probe, one cell
    assert fake.reads[0][0].register_entry.index.index == 0
    assert len(cli.sessions) == 2


def test_thrift_transport_without_port_is_one_clear_error():
    with pytest.raises(ControllerError, match=r"register transport 'thrift' needs the switch's Thrift port"):
        _switch(registers="thrift")


def test_unknown_transport_is_named():
    with pytest.raises(ControllerError, match=r"register transport 'grpc': expected one of auto, p4runtime, thrift"):
        _switch(registers="grpc")
