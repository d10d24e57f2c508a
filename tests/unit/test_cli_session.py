"""The long-lived ``simple_switch_CLI`` session against a fake CLI: Python's ``cmd`` loop with
BMv2's prompt, as ``runtime_CLI.py`` runs it with stdin on a pipe."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from innet.controller.cli_session import BATCH, CliSession
from innet.controller.errors import ControllerError
from innet.controller.registers import ThriftCliRegisters
from innet.controller.schema import RegisterInfo

FAKE = '''
import cmd, os, sys, time
print("Obtaining JSON from switch...")
print("Done")
cells = {}
class Cli(cmd.Cmd):
    prompt = "RuntimeCmd: "
    intro = "Control utility for runtime P4 table manipulation"
    def do_register_write(self, line):
        name, index, value = line.split()
        cells[int(index)] = int(value)
    def do_register_read(self, line):
        name, index = line.split()
        print(f"{name}[{index}]= {cells.get(int(index), 0)}")
    def do_pid(self, line):
        print(f"pid={os.getpid()}")
    def do_die(self, line):
        print("Error: the switch went away")
        sys.exit(3)
    def do_sleep(self, line):
        time.sleep(float(line))
    def do_EOF(self, line):
        print()
        return True
Cli().cmdloop()
'''
REG = RegisterInfo(id=0x16000001, name="MyIngress.r", size=4096, bitwidth=32)


@pytest.fixture
def fake_cli(tmp_path: Path) -> str:
    path = tmp_path / "simple_switch_CLI"
    path.write_text(f"#!{sys.executable}\n{FAKE}")
    path.chmod(0o755)
    return str(path)


def test_one_process_answers_many_calls(fake_cli: str):
    session = CliSession(timeout=30)
    regs = ThriftCliRegisters(9090, cli=fake_cli, runner=session)
    try:
        regs.write({REG.name: [(1, 7), (2, 9)]})
        assert regs.read(REG, range(1, 3)) == [7, 9]
        regs.write({REG.name: [(3, 1)]})
        assert regs.read(REG, range(3, 4)) == [1]
        assert session.starts == 1
    finally:
        regs.close()


def test_more_commands_than_a_batch_do_not_block(fake_cli: str):
    regs = ThriftCliRegisters(9090, cli=fake_cli, runner=CliSession(timeout=60))
    n = 3 * BATCH + 5  # more than a pipe holds in one go, both ways
    try:
        regs.write({REG.name: [(i, i * 3) for i in range(n)]})
        assert regs.read(REG, range(0, n // 4)) == [i * 3 for i in range(n // 4)]
    finally:
        regs.close()


def test_a_cli_that_dies_is_one_error_and_the_next_call_starts_another(fake_cli: str):
    session = CliSession(timeout=30)
    try:
        with pytest.raises(ControllerError, match=r"^register fallback: .*simple_switch_CLI --thrift-port 9090 "
                                                  r"exited with 3: .*Error: the switch went away"):
            session([fake_cli, "--thrift-port", "9090"], "die\n")
        assert "x[0]= 0" in session([fake_cli, "--thrift-port", "9090"], "register_read x 0\n")
        assert session.starts == 2
    finally:
        session.close()


def test_a_cli_that_hangs_is_killed_at_the_deadline(fake_cli: str):
    session = CliSession(timeout=1)
    try:
        with pytest.raises(ControllerError, match=r"did not answer within 1 s$"):
            session([fake_cli, "--thrift-port", "9090"], "sleep 30\n")
        assert session.running == 0
    finally:
        session.close()


def test_close_ends_the_process(fake_cli: str):
    session = CliSession(timeout=30)
    out = session([fake_cli, "--thrift-port", "9090"], "pid\n")
    pid = int(out.split("pid=")[1].split()[0])
    assert session.running == 1 and Path(f"/proc/{pid}").exists()
    session.close()
    assert session.running == 0 and not Path(f"/proc/{pid}").exists()


def test_missing_cli_is_named():
    with pytest.raises(ControllerError, match=r"'no-such-simple_switch_CLI' not found on PATH .*p4lang"):
        CliSession()(["no-such-simple_switch_CLI", "--thrift-port", "1"], "register_read x 0\n")
