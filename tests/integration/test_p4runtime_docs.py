"""The register snippets of docs/p4runtime.md run as documented against innet-switch.

The switch is started with a P4 source file as PROGRAM (device-config form 3 of the
docs); each ``<!-- snippet: NAME -->`` code block is run as a script, with the documented
address replaced by the switch's real one: the grpc/finsy and innet-client snippets with
innet's venv, the p4runtime-shell snippet with the shell's own venv.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from innet.controller.client import P4RuntimeClient
from innet.controller.entities import register_reads
from innet.controller.schema import P4Schema

HERE = Path(__file__).parent
DOC = HERE.parents[1] / "docs" / "p4runtime.md"
PROGRAM = HERE / "clients" / "innet_pio.p4"
PREFIX = "innet-switch: P4Runtime listening on "
DOC_ADDRESS = "127.0.0.1:9559"



def snippet(name: str, address: str) -> str:
    blocks = re.findall(rf"<!-- snippet: {re.escape(name)}\b.*?-->\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1, f"docs/p4runtime.md must have exactly one snippet {name!r}"
    assert blocks[0].count(DOC_ADDRESS) == 1, f"snippet {name!r} must name {DOC_ADDRESS} once"
    return blocks[0].replace(DOC_ADDRESS, address)


@pytest.fixture
def switch():
    proc = subprocess.Popen([sys.executable, "-m", "innet.switch.cli.switch", str(PROGRAM),
                             "--grpc-server-addr", "127.0.0.1:0", "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(PREFIX), line + proc.stderr.read()  # type: ignore[union-attr]
        yield line[len(PREFIX):].strip()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


def registers(address: str) -> list[int]:
    """Every cell of MyIngress.seen (a read-only session: no arbitration, no election id used up)."""
    with P4RuntimeClient(address, election_id=None) as client:
        p4info = client.get_p4info()
        assert p4info is not None
        schema = P4Schema(p4info)
        cells = client.read(register_reads(schema, "MyIngress.seen", range(schema.register("MyIngress.seen").size)))
        return [int.from_bytes(c.register_entry.data.bitstring, "big") for c in cells]


def test_register_snippets_run_as_documented(switch: str, shell_python: Path, tmp_path: Path):
    grpc_run = subprocess.run([sys.executable, "-c", snippet("registers-grpc", switch)],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert grpc_run.returncode == 0, grpc_run.stderr
    assert grpc_run.stdout.split("\n") == ["before 0", "after 9", ""]
    assert registers(switch) == [0, 9, 0, 0, 0, 0, 0, 0]

    shell_run = subprocess.run([str(shell_python), "-c", snippet("registers-shell", switch)],
                               capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert shell_run.returncode == 0, shell_run.stdout + shell_run.stderr
    assert "cells [0, 9, 0, 0, 0, 0, 0, 0]" in shell_run.stdout
    assert registers(switch) == [0, 9, 7, 0, 0, 0, 0, 0]


def test_innet_client_snippet_runs_as_documented(switch: str, tmp_path: Path):
    run = subprocess.run([sys.executable, "-c", snippet("registers-innet", switch)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n") == ["before 0", "after 9", ""]
    assert registers(switch) == [0, 9, 0, 0, 0, 0, 0, 0]
