"""Bad input to ``innet`` subcommands: one ``error`` line, a non-zero exit, no traceback.

Every case here fails before anything is started or contacted (argument parsing, input
files), so ``innet.cli.main`` runs in-process; the switch address is never dialled.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from innet.argtypes import host_port, input_file, int_range, output_dir, positive_float
from innet.cli import main

UNUSED = ["--switch", "127.0.0.1:1", "--timeout", "1"]


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    rc = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err.strip().splitlines()[-1]


def test_params_load_refuses_files_that_are_not_numeric_npy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = tmp_path / "garbage.npy"
    garbage.write_text("garbage\n")
    assert run(capsys, "params", "load", *UNUSED, "--job", "1", garbage) == (
        1, f"innet params load: error: {garbage}: not a NumPy .npy file (no \\x93NUMPY magic at the start)")
    pickled = tmp_path / "objects.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object))
    rc, line = run(capsys, "params", "load", *UNUSED, "--job", "1", pickled)
    assert rc == 1 and line.startswith(f"innet params load: error: {pickled}: unreadable .npy file: Object arrays cannot be loaded")
    words = tmp_path / "words.npy"
    np.save(words, np.array(["a", "b"]))
    assert run(capsys, "params", "load", *UNUSED, "--job", "1", words) == (
        1, f"innet params load: error: {words}: array of <U1 values; parameters must be integers or floats")
    truncated = tmp_path / "short.npy"
    np.save(truncated, np.arange(100, dtype=np.float32))
    truncated.write_bytes(truncated.read_bytes()[:-7])
    rc, line = run(capsys, "params", "load", *UNUSED, "--job", "1", truncated)
    assert rc == 1 and line.startswith(f"innet params load: error: {truncated}: unreadable .npy file:")


def test_pipeline_push_of_a_p4_file_that_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "latin.p4"
    src.write_bytes(b"// fine: caf\xe9\nconst bit<8> caf\xe9 = 1;\n")
    rc = main(["pipeline", "push", *UNUSED, str(src)])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert f"{src}:2:17: error: byte 0xe9 is not valid UTF-8 (byte 17 of the line)" in err


@pytest.mark.parametrize("args, message", [
    (["inspect", "--switch", "127.0.0.1:99999"], "argument --switch: '127.0.0.1:99999': port 99999 is outside 0..65535"),
    (["job", "list", "--switch", "localhost"], "argument --switch: 'localhost': expected HOST:PORT"),
    (["inspect", "--device-id", str(1 << 64)], f"argument --device-id: {1 << 64} is outside 0..{(1 << 64) - 1}"),
    (["inspect", "--election-id", "-1"], "argument --election-id: -1 is outside 0.."),
    (["inspect", "--thrift-port", "0"], "argument --thrift-port: 0 is outside 1..65535"),
    (["inspect", "--timeout", "0"], "argument --timeout: '0': must be a number > 0"),
    (["inspect", "--timeout", "nan"], "argument --timeout: 'nan': must be a number > 0"),
    (["bench", "--window", "0"], "argument --window: 0 is outside 1..1024"),
    (["bench", "--repeats", "0"], "argument --repeats: 0 is outside >= 1"),
    (["bench", "--timeout", "-1"], "argument --timeout: '-1': must be a number > 0"),
    (["demo", "--steps", "x"], "argument --steps: 'x' is not an integer"),
    (["train", "--steps", "0"], "argument --steps: 0 is outside >= 1"),
    (["train", "--workers", "1"], "argument --workers: 1 is outside >= 2"),
    (["train", "--sizes", "1K"], "unrecognized arguments: --sizes 1K"),
])
def test_numbers_and_addresses_out_of_range(args: list[str], message: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    rc, line = run(capsys, *args)
    assert rc == 2 and f"error: {message}" in line, line


def test_paths_of_the_wrong_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert run(capsys, "bench", "--out", a_file) == (
        2, f"innet bench: error: argument --out: {str(a_file)!r} exists and is not a directory")
    assert run(capsys, "demo", "--out", a_file)[1].endswith(f"{str(a_file)!r} exists and is not a directory")
    assert run(capsys, "testbed", "up", "--backend", "loopback", "--topo-file", tmp_path) == (
        2, f"innet testbed up: error: argument --topo-file: {str(tmp_path)!r} is a directory, not a file")
    assert run(capsys, "params", "load", "--job", "1", tmp_path)[1].endswith(
        f"argument file: {str(tmp_path)!r} is a directory, not a file")


def test_topo_file_that_is_binary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "topo.bin"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\xd0\xff")
    assert run(capsys, "testbed", "up", "--backend", "loopback", "--topo-file", binary) == (
        2, f"innet testbed up: topology file {str(binary)!r}: not JSON text: byte 0xd0 at offset 8 is not valid UTF-8")


def test_testbed_up_refuses_bad_options_before_bring_up(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "testbed", "up", "--backend", "loopback", "--switch-loss", "100") == (
        2, "innet testbed up: --switch-loss 100: must be a percentage within 0..100 (100 excluded)")
    rc, line = run(capsys, "testbed", "up", "--backend", "loopback", "--workers", "1")
    assert rc == 2 and line.startswith("innet testbed up: star: workers=1 must be an integer within 2..")


def test_small_frames_first_is_refused_on_the_star(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "bench", "--small-frames-first") == (
        2, "innet bench: --small-frames-first applies to --topo rail-only|rail-optimized")


def test_conformance_needs_stf_tests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "conformance", tmp_path) == (
        2, f"innet conformance: error: suite {str(tmp_path)!r}: holds no STF tests (NAME.stf beside NAME.p4)")
    (tmp_path / "lonely.stf").write_text("packet 0 00\n")  # no lonely.p4 beside it
    assert run(capsys, "conformance", tmp_path)[0] == 2
    assert run(capsys, "conformance", tmp_path / "lonely.stf") == (
        2, f"innet conformance: error: suite {str(tmp_path / 'lonely.stf')!r}: is not a directory")
    assert run(capsys, "conformance", tmp_path / "nope") == (
        2, f"innet conformance: error: suite {str(tmp_path / 'nope')!r}: no such directory")


def test_argtypes_accept_good_values(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    assert input_file(str(tmp_path / "f")) == tmp_path / "f"
    assert output_dir(str(tmp_path / "new" / "dir")) == tmp_path / "new" / "dir"
    assert host_port("[::1]:0") == "[::1]:0" and host_port("localhost:65535") == "localhost:65535"
    assert int_range(0, (1 << 64) - 1)(str((1 << 64) - 1)) == (1 << 64) - 1
    assert int_range(0, 10)("0x0a") == 10 and int_range(0, 10)("007") == 7
    assert positive_float("0.5") == 0.5
    with pytest.raises(argparse.ArgumentTypeError, match=r"x': no such file$"):
        input_file(str(tmp_path / "x"))


@pytest.mark.parametrize("name, args, message", [
    ("p4runtime", ["--out", "{file}"], "argument --out: '{file}' exists and is not a directory"),
    ("p4runtime", ["--rates", "1000,-5"], "argument --rates: '1000,-5': expected comma-separated rates >= 0 in pkt/s"),
    ("p4runtime", ["--size", "10"], "argument --size: 10 is outside 64..9000"),
    ("p4runtime", ["--write-rounds", "0"], "argument --write-rounds: 0 is outside >= 1"),
    ("pipeline", ["--seconds", "0"], "argument --seconds: '0': must be a number > 0"),
    ("pipeline", ["--out", "{file}"], "argument --out: '{file}' exists and is not a directory"),
])
def test_benchmark_subcommands_refuse_bad_flags(name: str, args: list[str], message: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from innet.cli import main

    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert main(["bench", name, *[a.format(file=a_file) for a in args]]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"innet bench {name}: error: {message.format(file=a_file)}"


def test_every_named_benchmark_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    from innet.cli import main
    from innet.testbed.cli.commands import NAMED_BENCHMARKS

    for name in NAMED_BENCHMARKS:
        assert main(["bench", name, "--help"]) == 0
        assert capsys.readouterr().out.startswith(f"usage: innet bench {name}")


def test_job_create_refuses_a_malformed_owner(capsys: pytest.CaptureFixture[str]) -> None:
    worker = ["--worker", "0,1,00:00:00:00:00:01,10.0.0.1,5000"]
    assert run(capsys, "job", "create", *UNUSED, "--job", "1", *worker, "--owner", "1,2,00:00:00:00:00:02,10.0.0.2,5001") == (
        1, "innet job create: error: owner '1,2,00:00:00:00:00:02,10.0.0.2,5001': expected "
           "RANK,PORT,MAC,IP,UDP_PORT,FIRST_CHUNK,CHUNKS")
    assert run(capsys, "job", "create", *UNUSED, "--job", "1", *worker,
               "--owner", "1,2,00:00:00:00:00:02,10.0.0.2,5001,0,x") == (
        1, "innet job create: error: owner '1,2,00:00:00:00:00:02,10.0.0.2,5001,0,x': FIRST_CHUNK and CHUNKS must be integers")
