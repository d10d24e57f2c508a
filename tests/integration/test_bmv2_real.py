"""Real BMv2, when its binaries are installed (skipped otherwise, naming the missing one):
every main program under p4/ compiles with p4c-bm2-ss unchanged, and the controller pushes
innet.p4 to simple_switch_grpc, creates a job (its register writes go through Thrift, never
RegisterEntry) and reads a register back."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from innet.testbed.backends.bmv2 import Bmv2Missing, Bmv2SwitchConfig, compile_program, controller_spec, find_tools, \
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
    tools = _tools()  # p4c where the backend finds it (INNET_P4C, PATH, the toolchain prefix)
    assert tools.p4c is not None
    out = compile_program(tools.p4c, program, tmp_path)
    assert (out / "p4info.txtpb").is_file() and (out / f"{program.stem}.json").is_file()


@pytest.mark.slow
def test_controller_drives_simple_switch_grpc(tmp_path: Path) -> None:
    from innet.controller.controller import Controller
    from innet.controller.jobs import JobSpec, WorkerSpec

    tools = _tools()
    if tools.cli is None:
        pytest.skip("simple_switch_CLI not found beside simple_switch_grpc (registers over Thrift need it)")
    config = Bmv2SwitchConfig(ports=(), grpc_address=f"127.0.0.1:{free_port()}", thrift_port=free_port())
    log = open(tmp_path / "bmv2.log", "wb")
    proc = subprocess.Popen(switch_command(tools.switch, config), stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_grpc(config.grpc_address, 20.0, alive=lambda: proc.poll() is None)
        workers = tuple(WorkerSpec(rank=r, port=r + 1, mac=f"00:00:00:00:00:0{r + 1}", ip=f"10.0.0.{r + 1}",
                                   udp_port=18767) for r in range(2))
        with Controller([controller_spec("s1", config)]) as ctl:
            ctl.push(pipeline(REPO / "p4" / "innet.p4", tools, tmp_path / "build"))
            ctl.create_job(JobSpec(job_id=1, workers=workers, slot_base=0, slot_count=64, k=64, mode="sum"))
            assert ctl.attach(1) == 1
            assert [j.job_id for j in ctl.jobs()["s1"]] == [1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
