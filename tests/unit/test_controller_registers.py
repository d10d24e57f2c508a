"""Register backend selection: P4Runtime first, BMv2's simple_switch_CLI on UNIMPLEMENTED
when a Thrift port is configured (with a fake CLI runner; BMv2 is not installable here)."""

from __future__ import annotations

import grpc
import pytest

from innet.controller.errors import ControllerError, UnimplementedError
from innet.controller.registers import AutoRegisters, ThriftCliRegisters
from innet.controller.schema import RegisterInfo

REG = RegisterInfo(id=0x16000001, name="MyIngress.innet_param_0", size=8, bitwidth=32)


class Unimplemented:
    """A P4Runtime backend on BMv2: every RegisterEntry is UNIMPLEMENTED."""

    def __init__(self) -> None:
        self.calls = 0

    def read(self, info, indexes):
        self.calls += 1
        raise UnimplementedError("read on switch x: UNIMPLEMENTED: RegisterEntry", grpc.StatusCode.UNIMPLEMENTED)

    def write(self, cells):
        self.calls += 1
        raise UnimplementedError("write: UNIMPLEMENTED", grpc.StatusCode.UNIMPLEMENTED)


class FakeCli:
    """simple_switch_CLI with one register held in a list; prints like BMv2's CLI."""

    def __init__(self) -> None:
        self.values = [0] * REG.size
        self.sessions: list[tuple[list[str], str]] = []

    def __call__(self, argv: list[str], stdin: str) -> str:
        self.sessions.append((argv, stdin))
        out = ["Obtaining JSON from switch...", "Done", "Control utility for runtime P4 table manipulation"]
        for line in stdin.splitlines():
            words = line.split()
            if words[0] == "register_write":
                self.values[int(words[2])] = int(words[3]) & 0xFFFFFFFF
                out.append("RuntimeCmd: ")
            elif words[0] == "register_read" and len(words) == 3:
                out.append(f"RuntimeCmd: {words[1]}[{words[2]}]= {self.values[int(words[2])]}")
            elif words[0] == "register_read":
                out.append(f"RuntimeCmd: {words[1]}= " + ", ".join(str(v) for v in self.values))
        out.append("RuntimeCmd: ")
        return "\n".join(out)


def test_falls_back_to_thrift_cli_and_stays_there():
    cli = FakeCli()
    p4rt = Unimplemented()
    regs = AutoRegisters(p4rt, ThriftCliRegisters(9090, runner=cli), "127.0.0.1:9559")  # type: ignore[arg-type]
    regs.write({REG.name: [(1, 5), (2, -1)]})
    assert cli.values[:3] == [0, 5, 0xFFFFFFFF]
    assert cli.sessions[0][0] == ["simple_switch_CLI", "--thrift-port", "9090"]
    assert cli.sessions[0][1] == f"register_write {REG.name} 1 5\nregister_write {REG.name} 2 -1\n"
    assert regs.read(REG, range(1, 3)) == [5, 0xFFFFFFFF]   # one command per index
    assert regs.read(REG, range(0, 8)) == cli.values        # whole register in one command
    assert cli.sessions[-1][1] == f"register_read {REG.name}\n"
    assert p4rt.calls == 1  # decided once


def test_without_thrift_port_the_error_says_what_to_do():
    regs = AutoRegisters(Unimplemented(), None, "127.0.0.1:9559")  # type: ignore[arg-type]
    with pytest.raises(UnimplementedError, match=r"UNIMPLEMENTED.*give its Thrift port \(SwitchEndpoint.thrift_port"):
        regs.read(REG, range(0, 1))


def test_cli_output_without_the_value_is_an_error():
    cli = ThriftCliRegisters(9090, runner=lambda argv, stdin: "RuntimeCmd: \n")
    with pytest.raises(ControllerError, match=r"register 'MyIngress.innet_param_0': simple_switch_CLI gave no value"):
        cli.read(REG, range(0, 1))
    cli = ThriftCliRegisters(9090, runner=lambda argv, stdin: "Error: Invalid register name (x)\n")
    with pytest.raises(ControllerError, match=r"register write via simple_switch_CLI: Error: Invalid register name"):
        cli.write({REG.name: [(0, 1)]})


def test_missing_cli_binary_is_named():
    cli = ThriftCliRegisters(9090, cli="no-such-simple_switch_CLI")
    with pytest.raises(ControllerError, match="'no-such-simple_switch_CLI' not found on PATH"):
        cli.read(REG, range(0, 1))
