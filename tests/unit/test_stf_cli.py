"""innet-stf exit codes (0 pass, 1 mismatch, 2 usage/compile error)."""

from pathlib import Path

from innet.switch.cli.stf import main

SHARED = Path(__file__).resolve().parents[1] / "conformance" / "bmv2"  # the vendored BMv2-confirmed corpus


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


def test_stf_bytes_not_utf8_are_located(tmp_path: Path, capsys: object) -> None:
    p4 = SHARED / "drop.p4"
    stf = tmp_path / "t.stf"
    stf.write_bytes(b"# caf\xe9 in a comment is fine\npacket 0 00 ff\nexpect 1 00 \xff\n")
    assert main([str(p4), str(stf)]) == 2
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert err.strip() == f"innet-stf: {stf}:3: byte 0xff (byte 13 of the line) is not valid UTF-8"


def test_p4_bytes_not_utf8_are_located(tmp_path: Path, capsys: object) -> None:
    p4 = tmp_path / "p.p4"
    p4.write_bytes(b"\xff")
    assert main([str(p4), str(SHARED / "drop.stf")]) == 2
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert err.strip() == f"innet-stf: {p4}:1:1: error: byte 0xff is not valid UTF-8 (byte 1 of the line)"


def test_directories_are_named_directories(tmp_path: Path, capsys: object) -> None:
    assert main([str(tmp_path), str(tmp_path)]) == 2
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert err.strip().splitlines()[-1] == (f"innet-stf: error: argument program: {str(tmp_path)!r} "
                                            "is a directory, not a file")


def test_empty_header_runs(capsys: object) -> None:
    conformance = Path(__file__).resolve().parents[1] / "conformance" / "parser"
    assert main([str(conformance / "empty_header.p4"), str(conformance / "empty_header.stf")]) == 0
    assert "3 packet(s), all outputs as expected" in capsys.readouterr().out  # type: ignore[attr-defined]
