"""innet-stf exit codes (0 pass, 1 mismatch, 2 usage/compile error)."""

from pathlib import Path

from innet.switch.cli.stf import main

SHARED = Path(__file__).resolve().parents[3] / "shared" / "conformance"


def test_pass_and_mismatch(tmp_path: Path, capsys: object) -> None:
    p4 = SHARED / "drop.p4"
    assert main([str(p4), str(SHARED / "drop.stf")]) == 0
    bad = tmp_path / "bad.stf"
    bad.write_text("packet 0 00 ff\nexpect 1 00 02 $\n")
    assert main([str(p4), str(bad)]) == 1
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert "port 1" in err and "expected 0002$" in err and "got      0001" in err


def test_usage_and_compile_errors(tmp_path: Path, capsys: object) -> None:
    assert main([]) == 2
    assert main([str(tmp_path / "missing.p4"), str(tmp_path / "x.stf")]) == 2
    broken = tmp_path / "broken.p4"
    broken.write_text("this is not P4\n")
    stf = tmp_path / "t.stf"
    stf.write_text("packet 0 00\n")
    assert main([str(broken), str(stf)]) == 2
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert err.strip().splitlines()[-1].startswith("innet-stf: ")
