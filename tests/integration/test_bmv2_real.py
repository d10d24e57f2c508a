"""Real BMv2, when its binaries are installed (skipped otherwise, naming the missing one):
every main program under p4/ compiles with p4c-bm2-ss unchanged, and the controller pushes
innet.p4 to simple_switch_grpc, creates a job (its register writes go through Thrift, never
RegisterEntry) and reads a register back."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from innet.controller.jobs import JobSpec, WorkerSpec

from innet.testbed.backends.bmv2 import Bmv2Missing, Bmv2SwitchConfig, Bmv2Tools, compile_program, controller_spec, find_tools, \
    pipeline, switch_command, wait_grpc
from innet.testbed.core.freeport import free_port

REPO = Path(__file__).resolve().parents[2]
MAINS = sorted(p for p in (REPO / "p4").rglob("*.p4")
               if "include" not in p.parts and re.search(r"\)\s*main\s*;", p.read_text()))


def _tools(need_p4c: bool = True):  # type: ignore[no-untyped-def]
    try:
        return find_tools(need_p4c=need_p4c)
    except Bmv2Missing as missing:
        pytest.skip(str(missing))


@pytest.mark.slow
@pytest.mark.parametrize("program", MAINS, ids=[str(p.relative_to(REPO)) for p in MAINS])
def test_p4c_compiles_every_program_unchanged(program: Path, tmp_path: Path) -> None:
    """Through the compile cache, keyed by the p4c binary and every source file, so a program
    p4c compiled before on this machine is not compiled again (agg2048: 40 s); one program
    always runs p4c itself."""
    tools = _tools()  # p4c where the backend finds it (INNET_P4C, PATH, the toolchain prefix)
    assert tools.p4c is not None
    out = compile_program(tools.p4c, program, tmp_path, cache=program.name != "agg64.p4")
    assert (out / "p4info.txtpb").is_file() and (out / f"{program.stem}.json").is_file()


@pytest.fixture
def bmv2_switch(tmp_path: Path) -> Iterator[tuple[Bmv2SwitchConfig, Bmv2Tools]]:
    """A simple_switch_grpc without ports (``--no-p4``), stopped at the end."""
    tools = _tools()
    if tools.cli is None:
        pytest.skip("simple_switch_CLI not found beside simple_switch_grpc (registers over Thrift need it)")
    config = Bmv2SwitchConfig(ports=(), grpc_address=f"127.0.0.1:{free_port()}", thrift_port=free_port())
    log = open(tmp_path / "bmv2.log", "wb")
    proc = subprocess.Popen(switch_command(tools.switch, config), stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_grpc(config.grpc_address, 20.0, alive=lambda: proc.poll() is None)
        yield config, tools
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


WORKERS = tuple(WorkerSpec(rank=r, port=r + 1, mac=f"00:00:00:00:00:0{r + 1}", ip=f"10.0.0.{r + 1}",
                           udp_port=18767) for r in range(2))


@pytest.mark.slow
def test_controller_drives_simple_switch_grpc(tmp_path: Path, bmv2_switch) -> None:
    from innet.controller.controller import Controller

    config, tools = bmv2_switch
    with Controller([controller_spec("s1", config)]) as ctl:
        ctl.push(pipeline(REPO / "p4" / "innet.p4", tools, tmp_path / "build"))
        ctl.create_job(JobSpec(job_id=1, workers=WORKERS, slot_base=0, slot_count=64, k=64, mode="sum"))
        assert ctl.attach(1) == 1
        assert [j.job_id for j in ctl.jobs()["s1"]] == [1]


@pytest.mark.slow
def test_parameters_round_trip_through_one_cli(tmp_path: Path, bmv2_switch) -> None:
    """A job's parameters (K=64 registers x 2 chunks) written and read back over Thrift, by one
    simple_switch_CLI process for the whole session (one per call took ~0.5-3 s each)."""
    from innet.controller.controller import Controller

    config, tools = bmv2_switch
    values = np.arange(-64, 64, dtype=np.int32) * 1000
    job = JobSpec(job_id=1, workers=WORKERS, slot_base=0, slot_count=16, k=64, mode="sgd", lr=0.5,
                  param_chunks=2)
    with Controller([controller_spec("s1", config)]) as ctl:
        ctl.push(pipeline(REPO / "p4" / "innet.p4", tools, tmp_path / "build"))
        ctl.create_job(job)
        ctl.load_params(job, values)
        assert np.array_equal(ctl.read_params(job, as_float=False), values)
        session = ctl["s1"].switch._session
        assert session is not None and session.starts == 1


@pytest.mark.slow
def test_inspect_reads_simple_switch_grpc(tmp_path: Path, bmv2_switch) -> None:
    """``innet inspect`` against simple_switch_grpc: jobs over P4Runtime, a register over Thrift."""
    from innet.controller.controller import Controller

    config, tools = bmv2_switch
    values = np.arange(1, 129, dtype=np.int32)
    job = JobSpec(job_id=3, workers=WORKERS, slot_base=0, slot_count=16, k=64, mode="sgd", lr=0.5,
                  param_chunks=2)
    with Controller([controller_spec("s1", config)]) as ctl:
        ctl.push(pipeline(REPO / "p4" / "innet.p4", tools, tmp_path / "build"))
        ctl.create_job(job)
        ctl.load_params(job, values)
        cmd = [sys.executable, "-m", "innet.cli", "inspect", "--switch", config.grpc_address, "--device-id",
               str(config.device_id), "--election-id", "7", "--thrift-port", str(config.thrift_port), "--json",
               "--register", "MyIngress.innet_param_1", "--range", "0:2"]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                                env={**os.environ, "INNET_BMV2_BIN": str(tools.switch)})
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [j["job_id"] for j in doc["jobs"]] == [3], doc
    assert doc["registers"] == [{"name": "MyIngress.innet_param_1", "start": 0, "values": [2, 66]}], doc
    # param_1 holds element chunk*64 + 1 of 1..128
