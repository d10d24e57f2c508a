"""innet.controller.compiler: .p4 sources are compiled by a subprocess (innet-p4c, or
the command in INNET_P4C such as p4c-bm2-ss), errors are one located line."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from innet.controller.compiler import P4Compiler, first_error
from innet.controller.errors import PipelineConfigError
from innet.controller.pipeline import PipelineConfig

PIO = Path(__file__).parents[1] / "integration" / "clients" / "innet_pio.p4"


def test_compile_error_is_one_located_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <v1model.p4>\ncontrol C() { apply { x = ; } }\n")
    with pytest.raises(PipelineConfigError, match=r"^P4 program '.*bad.p4' does not compile: .*bad.p4:2:\d+: error") as info:
        PipelineConfig.from_p4(bad, compiler=P4Compiler())
    assert "\n" not in str(info.value)


def test_missing_compiler_names_the_variable(tmp_path: Path) -> None:
    compiler = P4Compiler.from_env({"INNET_P4C": "/nonexistent/p4c-bm2-ss --emit-externs"})
    assert compiler.command == ("/nonexistent/p4c-bm2-ss", "--emit-externs") and compiler.is_bmv2
    with pytest.raises(PipelineConfigError, match=r"P4 compiler '/nonexistent/p4c-bm2-ss' not found \(set INNET_P4C"):
        PipelineConfig.from_p4(PIO, compiler=compiler)


def test_blank_variable_means_innet_p4c() -> None:
    assert P4Compiler.from_env({"INNET_P4C": "  "}) == P4Compiler()
    assert not P4Compiler().is_bmv2


def test_bmv2_command_line(tmp_path: Path) -> None:
    argv = P4Compiler(("p4c-bm2-ss",)).argv(PIO, tmp_path, (Path("inc"),), {"A": None, "B": "2"})
    assert argv == ["p4c-bm2-ss", "--p4v", "16", "-o", str(tmp_path / "innet_pio.json"),
                    "--p4runtime-files", str(tmp_path / "p4info.txtpb"), "-Iinc", "-DA", "-DB=2", str(PIO)]


def test_bmv2_output_is_loaded(tmp_path: Path) -> None:
    """A stand-in p4c-bm2-ss (copies innet-p4c's P4Info, writes a JSON) exercises the
    BMv2 path without p4c installed: the P4Info and the BMv2 JSON come back."""
    reference = PipelineConfig.from_p4(PIO)
    info = tmp_path / "ref.txtpb"
    from innet.switch.p4rt_codec.p4info_files import write_p4info

    write_p4info(reference.p4info, info)
    fake = tmp_path / "p4c-bm2-ss"
    fake.write_text(f"#!{sys.executable}\n"
                    "import shutil, sys\n"
                    "a = sys.argv\n"
                    "open(a[a.index('-o') + 1], 'w').write('{\"bmv2\": true}')\n"
                    f"shutil.copy({str(info)!r}, a[a.index('--p4runtime-files') + 1])\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    config = PipelineConfig.from_p4(PIO, compiler=P4Compiler((str(fake),)))
    assert config.name == "innet_pio"
    assert config.p4info == reference.p4info and config.device_config == b'{"bmv2": true}'


def test_first_error_prefers_the_error_line() -> None:
    assert first_error("note: x\nprog.p4:3:1: error: bad\n   ^\n", 1) == "prog.p4:3:1: error: bad"
    assert first_error("something\nlast words\n", 1) == "last words"
    assert first_error("", 7) == "compiler exited with status 7"
