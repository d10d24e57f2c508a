"""The bmv2 backend without BMv2: binary discovery and its one-line messages, the p4c and
simple_switch_grpc command lines, the controller spec, and a p4c-bm2-ss output directory
taken as the device config."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from innet.testbed.backends.bmv2 import (Bmv2Error, Bmv2Missing, Bmv2SwitchConfig, Bmv2Tools, check_growth, check_impl,
                                compile_command, controller_spec, find_tools, pipeline, switch_command)

REPO = Path(__file__).resolve().parents[2]


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_missing_switch_names_it_and_how_to_get_it():
    with pytest.raises(Bmv2Missing, match=r"^bmv2 backend: simple_switch_grpc not found on PATH \(or INNET_BMV2_BIN\):"
                                          r" install BMv2 .*p4lang"):
        find_tools(env={}, which=lambda name: None, prefixes=())


def test_missing_p4c_is_named_after_the_switch_is_found(tmp_path):
    _exe(tmp_path / "simple_switch_grpc")
    with pytest.raises(Bmv2Missing, match=r"p4c-bm2-ss not found on PATH \(or INNET_P4C\).*install p4c"):
        find_tools(env={"INNET_BMV2_BIN": str(tmp_path)}, which=lambda name: None, prefixes=())
    with pytest.raises(Bmv2Missing, match=r"INNET_P4C=/nope/p4c-bm2-ss: no such file"):
        find_tools(env={"INNET_BMV2_BIN": str(tmp_path), "INNET_P4C": "/nope/p4c-bm2-ss"}, which=lambda name: None, prefixes=())


def test_env_directory_and_binary_and_cli_beside_it(tmp_path):
    switch = _exe(tmp_path / "bin" / "simple_switch_grpc")
    cli = _exe(tmp_path / "bin" / "simple_switch_CLI")
    p4c = _exe(tmp_path / "p4c" / "p4c-bm2-ss")
    for given in (tmp_path / "bin", switch):
        tools = find_tools(env={"INNET_BMV2_BIN": str(given), "INNET_P4C": str(p4c)}, which=lambda name: None, prefixes=())
        assert tools == Bmv2Tools(switch, cli, p4c)


def test_the_toolchain_prefix_is_searched_after_path(tmp_path):
    switch = _exe(tmp_path / "bin" / "simple_switch_grpc")
    cli = _exe(tmp_path / "bin" / "simple_switch_CLI")
    p4c = _exe(tmp_path / "bin" / "p4c-bm2-ss")
    assert find_tools(env={"INNET_P4_PREFIX": str(tmp_path)}, which=lambda name: None) == Bmv2Tools(switch, cli, p4c)
    with pytest.raises(Bmv2Missing, match=r"not found on PATH \(or INNET_BMV2_BIN\) or in /nope/bin:"):
        find_tools(env={"INNET_P4_PREFIX": "/nope"}, which=lambda name: None)


def test_switch_command_puts_target_options_after_the_separator():
    config = Bmv2SwitchConfig(ports=((1, "s1-eth1"), (2, "s1-eth2")), device_id=3, grpc_address="127.0.0.1:50051",
                              thrift_port=9091, cpu_port=510)
    assert switch_command(Path("/usr/bin/simple_switch_grpc"), config) == [
        "/usr/bin/simple_switch_grpc", "--device-id", "3", "-i", "1@s1-eth1", "-i", "2@s1-eth2",
        "--thrift-port", "9091", "--no-p4", "--", "--grpc-server-addr", "127.0.0.1:50051", "--cpu-port", "510"]
    with_json = Bmv2SwitchConfig(ports=(), json=Path("build/innet.json"))
    assert switch_command(Path("ss"), with_json)[-4:] == ["build/innet.json", "--", "--grpc-server-addr",
                                                          "127.0.0.1:9559"]


def test_compile_command_uses_p4cs_own_includes():
    cmd = compile_command(Path("/usr/bin/p4c-bm2-ss"), REPO / "p4" / "innet.p4", Path("/tmp/out"),
                          {"INNET_K": "64", "DEBUG": None})
    assert cmd == ["/usr/bin/p4c-bm2-ss", "--arch", "v1model", "--std", "p4-16", "-D", "DEBUG", "-D", "INNET_K=64",
                   "-o", "/tmp/out/innet.json", "--p4runtime-files", "/tmp/out/p4info.txtpb",
                   str(REPO / "p4" / "innet.p4")]
    assert not any("p4/include" in part for part in cmd)


def test_controller_spec_sends_registers_through_thrift_only():
    spec = controller_spec("s1", Bmv2SwitchConfig(ports=(), thrift_port=9095, grpc_address="127.0.0.1:9600"))
    assert (spec.address, spec.thrift_port, spec.registers) == ("127.0.0.1:9600", 9095, "thrift")
    assert spec.switch_impl == "bmv2"  # innet's config is refused before it is sent


def test_p4c_output_directory_is_the_device_config(tmp_path):
    """p4c-bm2-ss writes NAME.json + p4info.txtpb; the JSON goes to the switch byte for byte."""
    from innet.controller.pipeline import PipelineConfig
    from innet.switch.device_config import build

    built = build(REPO / "p4" / "examples" / "basic_forward.p4")
    (tmp_path / "p4info.txtpb").write_text(str(built.p4info))
    bmv2_json = json.dumps({"program": "basic_forward.p4", "__meta__": {"version": [2, 23]}}).encode()
    (tmp_path / "basic_forward.json").write_bytes(bmv2_json)
    config = pipeline(tmp_path, Bmv2Tools(Path("ss"), None, None), tmp_path / "work")
    assert config.device_config == bmv2_json
    assert config.p4info == built.p4info
    assert config.name == "basic_forward"
    with pytest.raises(Bmv2Missing, match=r"p4c-bm2-ss not found"):
        pipeline(REPO / "p4" / "innet.p4", Bmv2Tools(Path("ss"), None, None), tmp_path / "work")
    with pytest.raises(Exception, match=r"give a .p4 file or a p4c-bm2-ss output directory"):
        pipeline(tmp_path / "basic_forward.json", Bmv2Tools(Path("ss"), None, None), tmp_path / "work")
    assert isinstance(config, PipelineConfig)
    (tmp_path / "basic_forward.innet.json").write_bytes(built.config.to_bytes())  # innet-p4c wrote there too
    assert pipeline(tmp_path, Bmv2Tools(Path("ss"), None, None), tmp_path / "work").device_config == bmv2_json


def test_switch_impl_check():
    assert check_impl("innet", root=False) is None
    with pytest.raises(Bmv2Error, match=r"--switch-impl 'p4': expected one of innet, bmv2"):
        check_impl("p4", root=True)


def test_luwu_k_on_bmv2_fits_what_simple_switch_adds_to_a_packet():
    """REDUCE/BCAST answer a header-only request with K values; simple_switch's packet buffer
    takes 512 bytes more than what arrived (it aborts beyond)."""
    check_growth(64)
    with pytest.raises(Bmv2Error, match=r"^K=256 with REDUCE/BCAST on BMv2: .* grows by 1024 bytes, simple_switch "
                                         r"adds at most 512 to a packet \(use K=64\)$"):
        check_growth(256)


def test_luwu_run_on_bmv2_with_a_k_too_large_is_refused_before_any_job(tmp_path):
    """Refused before the job is replaced or a process spawned (the fake has neither)."""
    from types import SimpleNamespace

    from innet.testbed.core.testbed import TestbedError, TestbedOptions
    from innet.testbed.luwu.run import RunConfig, run_training

    tb = SimpleNamespace(options=TestbedOptions(k=256, switch_impl="bmv2"), worker_hosts=lambda: ("h1", "h2", "h3"))
    with pytest.raises(TestbedError, match=r"^luwu run: K=256 with REDUCE/BCAST on BMv2"):
        run_training(tb, RunConfig(mode="luwu", workers=2, nodes=1), tmp_path)  # type: ignore[arg-type]


FAKE_P4C = """#!{python}
import sys
from pathlib import Path
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(args[-1] + "\\n")
Path(args[args.index("-o") + 1]).write_text('{{"compiled": true}}')
Path(args[args.index("--p4runtime-files") + 1]).write_text("pkg_info {{}}\\n")
"""


def test_compiled_programs_are_reused_until_a_source_changes(tmp_path, monkeypatch):
    """The second compile of the same program, defines and compiler is a copy; editing a file
    the program includes, or another define, runs p4c again; ``cache=False`` always runs it."""
    from innet.testbed.backends.bmv2 import compile_program

    monkeypatch.setenv("INNET_NATIVE_CACHE", str(tmp_path / "cache"))
    log = tmp_path / "p4c.log"
    p4c = tmp_path / "p4c-bm2-ss"
    p4c.write_text(FAKE_P4C.format(python=sys.executable, log=str(log)))
    p4c.chmod(0o755)
    (tmp_path / "src" / "inc").mkdir(parents=True)
    program = tmp_path / "src" / "prog.p4"
    program.write_text('#include <core.p4>\n#include "inc/a.p4"\n')
    (tmp_path / "src" / "inc" / "a.p4").write_text('#include "b.p4"\n')
    included = tmp_path / "src" / "inc" / "b.p4"
    included.write_text("const bit<8> X = 1;\n")

    def runs() -> int:
        return len(log.read_text().splitlines()) if log.exists() else 0

    out = compile_program(p4c, program, tmp_path / "out1")
    assert runs() == 1
    out = compile_program(p4c, program, tmp_path / "out2")
    assert runs() == 1 and (out / "prog.json").read_text() == '{"compiled": true}'
    assert (out / "p4info.txtpb").is_file()
    compile_program(p4c, program, tmp_path / "out3", {"K": "4"})
    assert runs() == 2
    included.write_text("const bit<8> X = 2;\n")
    compile_program(p4c, program, tmp_path / "out4")
    assert runs() == 3
    compile_program(p4c, program, tmp_path / "out5", cache=False)
    assert runs() == 4


def _fake_ahead(tmp_path, monkeypatch, prelude: str, names: tuple[str, ...]) -> tuple[Path, Path, list[Path]]:
    """A fake p4c that runs ``prelude`` first and logs the programs it compiled, a cache of
    this test's own, and one program per name: (p4c, log, programs)."""
    monkeypatch.setenv("INNET_NATIVE_CACHE", str(tmp_path / "cache"))
    log = tmp_path / "p4c.log"
    p4c = tmp_path / "p4c-bm2-ss"
    p4c.write_text(FAKE_P4C.format(python=sys.executable, log=str(log)).replace(
        "args = sys.argv[1:]\n", "args = sys.argv[1:]\n" + prelude))
    p4c.chmod(0o755)
    sources = [tmp_path / f"{name}.p4" for name in names]
    for i, source in enumerate(sources):
        source.write_text(f"const bit<8> X = {i};\n")
    return p4c, log, sources


def test_compile_ahead_fills_the_cache_in_order_and_leaves_failures_to_the_caller(tmp_path, monkeypatch):
    """Programs compiled ahead are copies when their user compiles them; a program p4c
    rejects is reported by the user's own compile, not by the compile ahead."""
    from innet.testbed.backends.bmv2 import Bmv2Error, compile_program
    from innet.testbed.backends.bmv2_ahead import CompileAhead

    p4c, log, sources = _fake_ahead(tmp_path, monkeypatch, "if args[-1].endswith('bad.p4'):\n"
                                    "    sys.exit('bad.p4:1: syntax error')\n", ("a", "b", "bad", "c"))
    with CompileAhead(p4c, sources + [sources[0]], tmp_path / "ahead", workers=1) as ahead:
        assert [ahead.wait(s, timeout=60) for s in sources] == [True, True, False, True]
        assert not ahead.wait(tmp_path / "never-asked.p4")
    good = sources[:2] + sources[3:]
    assert log.read_text().splitlines() == [str(s) for s in good]  # in order, each once (the fake logs successes)
    for s in good:
        assert (compile_program(p4c, s, tmp_path / "use" / s.stem) / f"{s.stem}.json").is_file()
    assert len(log.read_text().splitlines()) == len(good)  # all copies from the cache
    with pytest.raises(Bmv2Error, match="bad.p4 failed"):
        compile_program(p4c, sources[2], tmp_path / "use" / "bad")


def test_compile_ahead_drops_what_it_has_not_started_when_closed(tmp_path, monkeypatch):
    from innet.testbed.backends.bmv2_ahead import CompileAhead

    p4c, log, sources = _fake_ahead(tmp_path, monkeypatch, "import time\ntime.sleep(0.3)\n",
                                    tuple(f"p{i}" for i in range(20)))
    ahead = CompileAhead(p4c, sources, tmp_path / "ahead", workers=1)
    assert ahead.wait(sources[0], timeout=60)
    ahead.close()
    ran = len(log.read_text().splitlines())
    assert 1 <= ran < len(sources)
