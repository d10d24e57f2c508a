"""innet.controller.pipeline: the config pushed to a switch is chosen by that switch's
implementation, not by INNET_P4C or by which compiler wrote a directory last; a config the
switch cannot run is refused before it is sent."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from innet.controller.compiler import P4Compiler
from innet.controller.errors import PipelineConfigError
from innet.controller.pipeline import PipelineConfig
from innet.switch.p4rt_codec.p4info_files import write_p4info

from testkit.fake_p4c import bmv2_json, fake_p4c_bm2_ss

PIO = Path(__file__).parents[1] / "integration" / "clients" / "innet_pio.p4"


@pytest.fixture(scope="module")
def innet_pio() -> PipelineConfig:
    return PipelineConfig.from_p4(PIO, compiler=P4Compiler())


def _both_outputs(directory: Path, innet: PipelineConfig) -> Path:
    """A directory both compilers wrote into: one P4Info, innet's config and BMv2's JSON."""
    directory.mkdir()
    write_p4info(innet.p4info, directory / "p4info.txtpb")
    (directory / "innet_pio.innet.json").write_bytes(innet.device_config)
    (directory / "innet_pio.json").write_bytes(bmv2_json())
    return directory


def test_compiler_follows_the_switch_not_the_variable() -> None:
    bmv2_env = {"INNET_P4C": "/opt/p4tools/bin/p4c-bm2-ss"}
    assert P4Compiler.for_switch("innet", bmv2_env) == P4Compiler()
    assert P4Compiler.for_switch("bmv2", bmv2_env).command == ("/opt/p4tools/bin/p4c-bm2-ss",)
    assert P4Compiler.for_switch("bmv2", {}).command == ("p4c-bm2-ss",)
    wrapper = {"INNET_P4C": "/usr/local/bin/my-innet-p4c --quiet"}
    assert P4Compiler.for_switch("innet", wrapper).command == ("/usr/local/bin/my-innet-p4c", "--quiet")
    assert P4Compiler.for_switch("bmv2", wrapper).command == ("p4c-bm2-ss",)
    with pytest.raises(PipelineConfigError, match=r"switch implementation 'tofino': expected innet or bmv2"):
        P4Compiler.for_switch("tofino", {})


def test_directory_with_both_outputs_gives_each_switch_its_own(tmp_path: Path, innet_pio: PipelineConfig) -> None:
    directory = _both_outputs(tmp_path / "build", innet_pio)
    assert PipelineConfig.from_dir(directory, "innet").kind == "innet"
    assert PipelineConfig.from_dir(directory, "bmv2").kind == "bmv2"
    assert PipelineConfig.load(directory, switch_impl="bmv2").device_config == bmv2_json()
    assert PipelineConfig.from_dir(directory).kind == "innet"  # not told: innet-p4c's, as before


def test_directory_without_the_switchs_output_names_what_it_holds(tmp_path: Path,
                                                                  innet_pio: PipelineConfig) -> None:
    directory = _both_outputs(tmp_path / "build", innet_pio)
    (directory / "innet_pio.innet.json").unlink()
    with pytest.raises(PipelineConfigError, match=r"expected exactly one device config \*\.innet\.json "
                                                  r"\(innet-p4c output\), found innet_pio\.json$"):
        PipelineConfig.from_dir(directory, "innet")


def test_bmv2_json_under_an_innet_name_is_refused_before_sending(tmp_path: Path,
                                                                 innet_pio: PipelineConfig) -> None:
    directory = _both_outputs(tmp_path / "build", innet_pio)
    shutil.copyfile(directory / "innet_pio.json", directory / "innet_pio.innet.json")
    with pytest.raises(PipelineConfigError, match=r"^pipeline 'innet_pio' for innet-switch: device config is "
                                                  r"BMv2 JSON \(p4c-bm2-ss output\); innet executes P4 itself"):
        PipelineConfig.from_dir(directory, "innet")


def test_p4_source_is_compiled_for_the_switch_it_goes_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         innet_pio: PipelineConfig) -> None:
    """INNET_P4C names p4c-bm2-ss (a run with BMv2 switches too): innet-switch still gets
    innet-p4c's config, simple_switch_grpc the BMv2 JSON; without a switch named, the
    variable decides as before."""
    monkeypatch.setenv("INNET_P4C", str(fake_p4c_bm2_ss(tmp_path / "bin")))
    for_innet = PipelineConfig.load(PIO, switch_impl="innet")
    assert for_innet.kind == "innet" and for_innet.device_config == innet_pio.device_config
    for_bmv2 = PipelineConfig.load(PIO, switch_impl="bmv2")
    assert for_bmv2.kind == "bmv2" and for_bmv2.p4info == innet_pio.p4info
    assert PipelineConfig.load(PIO).kind == "bmv2"


def test_check_for_names_the_mismatch(innet_pio: PipelineConfig) -> None:
    assert innet_pio.check_for("innet") is innet_pio and innet_pio.check_for(None) is innet_pio
    with pytest.raises(PipelineConfigError, match=r"^pipeline 'innet_pio' for simple_switch_grpc: device config is "
                                                  r"innet device config \(innet-p4c output\), [\d.]+ kB; "
                                                  "simple_switch_grpc runs only p4c-bm2-ss's JSON"):
        innet_pio.check_for("bmv2")
