"""``innet conformance --p4c-samples DIR`` on a tiny fake samples directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.cli import main
from innet.p4c_samples import SamplesDirError, resolve_samples_dir, run_samples, sample_names

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> x; }
struct hs_t { h_t h; }
struct m_t { }
parser P(packet_in pkt, out hs_t h, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout hs_t h, inout m_t m) { apply { } }
control I(inout hs_t h, inout m_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; h.h.x = h.h.x + 1; }
}
control E(inout hs_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t h, inout m_t m) { apply { } }
control D(packet_out pkt, in hs_t h) { apply { pkt.emit(h.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _sample(d: Path, name: str, program: str, stf: str) -> None:
    (d / name).write_text(program)
    (d / name).with_suffix(".stf").write_text(stf)


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    d = tmp_path / "testdata" / "p4_16_samples"
    d.mkdir(parents=True)
    _sample(d, "good-bmv2.p4", PROGRAM, "packet 0 07\nexpect 1 08 $\n")
    _sample(d, "wrong-bmv2.p4", PROGRAM, "packet 0 07\nexpect 1 09 $\n")
    _sample(d, "bad1-bmv2.p4", PROGRAM.replace("h.h.x + 1", "h.h.x +"), "packet 0 07\n")
    _sample(d, "bad2-bmv2.p4", PROGRAM.replace("h.h.x + 1", "h.h.x +"), "packet 0 07\n")
    return tmp_path


def test_run_samples_groups_failures_by_reason(samples: Path) -> None:
    names = ["good-bmv2.p4", "wrong-bmv2.p4", "bad1-bmv2.p4", "bad2-bmv2.p4", "absent-bmv2.p4"]
    report = run_samples(samples, names)  # a p4c checkout: testdata/p4_16_samples is found
    assert report.passed == 1
    groups = report.failures_by_reason()
    first_reason, first_names = next(iter(groups.items()))
    assert first_names == ["bad1-bmv2.p4", "bad2-bmv2.p4"]  # the largest group first
    assert first_reason.startswith("syntax error")  # the file:line:col prefix is gone
    assert groups["output mismatch"] == ["wrong-bmv2.p4"]
    assert any("absent-bmv2.p4" in names for names in groups.values())


def test_bad_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SamplesDirError, match="holds no p4c samples"):
        resolve_samples_dir(tmp_path)


def test_cli_prints_rate_and_exits_zero_on_failures(samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listed = sample_names()[0]  # a name from the vendored list, with a program of ours
    d = samples / "testdata" / "p4_16_samples"
    _sample(d, listed, PROGRAM, "packet 0 07\nexpect 1 08 $\n")
    assert main(["conformance", "--p4c-samples", str(samples)]) == 0
    out = capsys.readouterr().out
    total = len(sample_names())
    assert f"1/{total} pass" in out
    assert f"{total - 1}  " in out  # every other listed sample is missing from the fake dir


def test_cli_bad_dir_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--p4c-samples", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("innet: ") and "nope" in err[0]


def test_vendored_list_has_the_203_names() -> None:
    names = sample_names()
    assert len(names) == len(set(names)) == 203
    assert all(n.endswith(".p4") for n in names)


def test_samples_run_on_the_chosen_executor(samples: Path) -> None:
    """``--executor native`` runs the samples on the generated C: a program the native
    executor refuses (a varbit wider than varbit<8191>) fails there with the refusal, and
    passes on python; a bit<128> field runs on both."""
    from innet.native_build import compiler_path

    if compiler_path() is None:
        pytest.skip("native executor needs a C compiler (cc/gcc)")
    d = samples / "testdata" / "p4_16_samples"
    wide = PROGRAM.replace("header h_t { bit<8> x; }", "header h_t { bit<8> x; bit<128> w; }")
    _sample(d, "wide-bmv2.p4", wide, "packet 0 07 " + "00" * 16 + "\nexpect 1 08 " + "00" * 16 + " $\n")
    big = PROGRAM.replace("header h_t { bit<8> x; }", "header h_t { bit<8> x; varbit<16384> v; }").replace(
        "pkt.extract(h.h);", "pkt.extract(h.h, 0);")
    _sample(d, "varbig-bmv2.p4", big, "packet 0 07\nexpect 1 08 $\n")
    names = ["good-bmv2.p4", "wide-bmv2.p4", "varbig-bmv2.p4"]
    native = run_samples(samples, names, executor="native")
    assert [r.passed for r in native.results] == [True, True, False]
    assert "varbit<16384>" in native.results[2].message
    assert [r.passed for r in run_samples(samples, names, executor="python").results] == [True, True, True]
    assert [r.passed for r in run_samples(samples, names, executor="auto").results] == [True, True, True]


def test_cli_names_the_executor(samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--p4c-samples", str(samples), "--executor", "python"]) == 0
    assert "(python executor)" in capsys.readouterr().out
