"""The Thrift register fallback against recorded ``simple_switch_CLI`` output
(tests/data/simple_switch_cli, formats from BMv2's runtime_CLI.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from innet.controller.errors import ControllerError
from innet.controller.registers import ThriftCliRegisters, run_subprocess
from innet.controller.schema import RegisterInfo

DATA = Path(__file__).resolve().parents[1] / "data" / "simple_switch_cli"
REG = RegisterInfo(id=0x16000001, name="MyIngress.innet_param_0", size=8, bitwidth=32)


class Replay:
    """A runner that answers with a recorded output and keeps what it was given."""

    def __init__(self, fixture: str) -> None:
        self.text = (DATA / fixture).read_text()
        self.calls: list[tuple[list[str], str]] = []

    def __call__(self, argv: list[str], stdin: str) -> str:
        self.calls.append((argv, stdin))
        return self.text


def test_read_per_index():
    run = Replay("register_read_index.out")
    big = RegisterInfo(id=REG.id, name=REG.name, size=64, bitwidth=32)  # 2 of 64 cells: one command each
    assert ThriftCliRegisters(9090, runner=run).read(big, range(3, 5)) == [42, 4294967295]
    assert run.calls == [(["simple_switch_CLI", "--thrift-port", "9090"],
                          f"register_read {REG.name} 3\nregister_read {REG.name} 4\n")]


def test_read_whole_register_in_one_command():
    run = Replay("register_read_all.out")
    assert ThriftCliRegisters(9090, runner=run).read(REG, range(0, 8)) == [0, 5, 4294967295, 0, 0, 0, 0, 7]
    assert run.calls[0][1] == f"register_read {REG.name}\n"


def test_write_and_reset_print_nothing_on_success():
    run = Replay("register_write.out")
    ThriftCliRegisters(9090, runner=run).write({REG.name: [(0, 1), (1, -1)]})
    assert run.calls[0][1] == f"register_write {REG.name} 0 1\nregister_write {REG.name} 1 -1\n"
    run = Replay("register_reset.out")
    ThriftCliRegisters(9090, runner=run).reset([REG.name])
    assert run.calls[0][1] == f"register_reset {REG.name}\n"


@pytest.mark.parametrize("fixture, message", [
    ("error_unknown_register.out", r"simple_switch_CLI: Error: Invalid register name \(MyIngress.nope\)"),
    ("error_invalid_index.out", r"simple_switch_CLI: Invalid register operation \(INVALID_INDEX\)"),
    ("error_bad_value.out", r"simple_switch_CLI: Error: Bad format for value, must be an integer"),
])
def test_cli_errors_become_one_line(fixture, message):
    regs = ThriftCliRegisters(9090, runner=Replay(fixture))
    with pytest.raises(ControllerError, match=rf"^register 'MyIngress.innet_param_0' via {message}$"):
        regs.read(REG, range(0, 1))
    with pytest.raises(ControllerError, match=rf"^register write via {message}$"):
        regs.write({REG.name: [(0, 1)]})
    with pytest.raises(ControllerError, match=rf"^register reset via {message}$"):
        regs.reset([REG.name])


def test_no_switch_on_the_thrift_port_names_the_port(tmp_path):
    fake = tmp_path / "simple_switch_CLI"
    fake.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write(open({str(DATA / 'error_no_switch.out')!r}).read())"
                    "\nsys.exit(1)\n")
    fake.chmod(0o755)
    with pytest.raises(ControllerError, match=r"exited with 1: Could not connect to thrift client on port 9090 "
                                              r"\(Make sure the switch is running"):
        ThriftCliRegisters(9090, cli=str(fake)).read(REG, range(0, 1))


def test_missing_cli_says_how_to_get_it():
    with pytest.raises(ControllerError, match=r"'no-such-simple_switch_CLI' not found on PATH .*p4lang"):
        run_subprocess(["no-such-simple_switch_CLI", "--thrift-port", "1"], "")
