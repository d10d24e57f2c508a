"""innet-p4c as a user runs it (subprocess on the installed console script).

The P4Info expected for the tutorial-style basic.p4 below is what p4c 1.2.5 emits for
p4lang/tutorials' basic exercise (same names, hence the same ids: 37375156, 25652968,
28792405, 21257015 appear in P4Info files published for that exercise).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from innet.switch.device_config import DeviceConfig, load_program
from innet.switch.p4info import P4InfoFormat, parse_p4info

P4C = Path(sys.executable).parent / "innet-p4c"
CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance" / "bmv2"  # the vendored BMv2-confirmed corpus

BASIC_P4 = """\
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x800;
typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

header ethernet_t { macAddr_t dstAddr; macAddr_t srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    ip4Addr_t srcAddr; ip4Addr_t dstAddr;
}
struct metadata { }
struct headers { ethernet_t ethernet; ipv4_t ipv4; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { TYPE_IPV4: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() { mark_to_drop(standard_metadata); }
    action ipv4_forward(macAddr_t dstAddr, egressSpec_t port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; drop; NoAction; }
        size = 1024;
        default_action = drop();
    }
    apply { if (hdr.ipv4.isValid()) { ipv4_lpm.apply(); } }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
"""

EXPECTED_BASIC_P4INFO = """\
# proto-file: p4/config/v1/p4info.proto
# proto-message: p4.config.v1.P4Info

pkg_info {
  arch: "v1model"
}
tables {
  preamble {
    id: 37375156
    name: "MyIngress.ipv4_lpm"
    alias: "ipv4_lpm"
  }
  match_fields {
    id: 1
    name: "hdr.ipv4.dstAddr"
    bitwidth: 32
    match_type: LPM
  }
  action_refs {
    id: 28792405
  }
  action_refs {
    id: 25652968
  }
  action_refs {
    id: 21257015
  }
  initial_default_action {
    action_id: 25652968
  }
  size: 1024
}
actions {
  preamble {
    id: 21257015
    name: "NoAction"
    alias: "NoAction"
    annotations: "@noWarn(\\"unused\\")"
  }
}
actions {
  preamble {
    id: 25652968
    name: "MyIngress.drop"
    alias: "drop"
  }
}
actions {
  preamble {
    id: 28792405
    name: "MyIngress.ipv4_forward"
    alias: "ipv4_forward"
  }
  params {
    id: 1
    name: "dstAddr"
    bitwidth: 48
  }
  params {
    id: 2
    name: "port"
    bitwidth: 9
  }
}
type_info {
}
"""


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(P4C), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.fixture()
def basic(tmp_path: Path) -> Path:
    path = tmp_path / "basic.p4"
    path.write_text(BASIC_P4)
    return path


def test_basic_p4info_matches_p4c(basic: Path, tmp_path: Path) -> None:
    out = tmp_path / "build"
    proc = run(basic, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert (out / "p4info.txtpb").read_text() == EXPECTED_BASIC_P4INFO


def test_device_config_loads_back_into_the_same_program(basic: Path, tmp_path: Path) -> None:
    proc = run(basic, "-o", tmp_path)
    assert proc.returncode == 0, proc.stderr
    config = DeviceConfig.from_bytes((tmp_path / "basic.innet.json").read_bytes())
    assert config.program == "basic"
    program = load_program(config)  # verifies the P4Info digest
    ingress = [c for c in program.reachable_controls() if c.name == "MyIngress"]
    assert [t.cp_name for t in ingress[0].tables] == ["MyIngress.ipv4_lpm"]


def test_p4runtime_files_formats(basic: Path, tmp_path: Path) -> None:
    files = [tmp_path / "a.txt", tmp_path / "b.json", tmp_path / "c.bin"]
    proc = run(basic, "-o", tmp_path / "o", "--p4runtime-files", ",".join(map(str, files)),
               "--p4runtime-format", "binary")
    assert proc.returncode == 0, proc.stderr
    text = parse_p4info(files[0].read_bytes())
    assert parse_p4info(files[1].read_bytes(), P4InfoFormat.JSON) == text
    assert parse_p4info(files[2].read_bytes(), P4InfoFormat.BINARY) == text
    assert parse_p4info((tmp_path / "o" / "p4info.bin").read_bytes(), P4InfoFormat.BINARY) == text


def test_include_dirs_and_defines(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "sizes.p4").write_text("#define LPM_SIZE 4096\n")
    prog = BASIC_P4.replace("#include <v1model.p4>", "#include <v1model.p4>\n#include <sizes.p4>")
    prog = prog.replace("size = 1024;", "size = LPM_SIZE;").replace("ttl - 1", "ttl - DEC")
    (tmp_path / "basic.p4").write_text(prog)
    proc = run(tmp_path / "basic.p4", "-o", tmp_path / "o", "-I", tmp_path / "lib", "-D", "DEC=2")
    assert proc.returncode == 0, proc.stderr
    assert "size: 4096" in (tmp_path / "o" / "p4info.txtpb").read_text()


def test_front_end_error_is_located_with_caret(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text(BASIC_P4.replace("hdr.ipv4.ttl - 1;", "hdr.ipv4.ttl - undefined_name;"))
    proc = run(bad, "-o", tmp_path / "o")
    assert proc.returncode == 1
    line_no = BASIC_P4.splitlines().index(next(l for l in BASIC_P4.splitlines() if "ttl - 1" in l)) + 1
    first = proc.stderr.splitlines()
    assert first[0].startswith(f"{bad}:{line_no}:") and "error" in first[0] and "undefined_name" in first[0]
    assert "undefined_name" in first[1] and first[2].strip() == "^"
    assert not (tmp_path / "o").exists()


def test_missing_source_file(tmp_path: Path) -> None:
    proc = run(tmp_path / "nope.p4", "-o", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == f"innet-p4c: error: argument source: {str(tmp_path / 'nope.p4')!r}: no such file"


def test_output_dir_that_is_a_file(basic: Path) -> None:
    proc = run(basic, "-o", basic)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == f"innet-p4c: error: argument -o/--output-dir: {str(basic)!r} exists and is not a directory"


@pytest.mark.parametrize(
    "args,message",
    [
        ((), "the following arguments are required: source"),
        (("x.p4", "--p4runtime-files", "info.yaml"), "cannot tell the P4Runtime file format from suffix '.yaml'"),
        (("x.p4", "--p4runtime-format", "xml"), "invalid choice: 'xml'"),
        (("x.p4", "-D", "1BAD=3"), "-D expects NAME or NAME=VALUE"),
    ],
)
def test_bad_arguments_exit_2(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    (tmp_path / "x.p4").write_text("")
    proc = run(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("innet-p4c: error:")


@pytest.mark.parametrize("name", sorted(p.stem for p in CONFORMANCE.glob("*.p4")))
def test_conformance_programs_compile(name: str, tmp_path: Path) -> None:
    proc = run(CONFORMANCE / f"{name}.p4", "-o", tmp_path)
    assert proc.returncode == 0, proc.stderr
    info = parse_p4info((tmp_path / "p4info.txtpb").read_bytes())
    assert info.pkg_info.arch == "v1model"
    load_program((tmp_path / f"{name}.innet.json").read_bytes())


def _first_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc
    assert "Traceback" not in proc.stderr
    return proc.stderr.splitlines()[0]


def test_header_not_byte_aligned_is_refused_at_compile_time(tmp_path: Path) -> None:
    bad = tmp_path / "unaligned.p4"
    bad.write_text(BASIC_P4.replace("bit<8> ttl;", "bit<7> ttl;"))
    proc = run(bad, "-o", tmp_path / "o")
    line_no = next(i for i, l in enumerate(BASIC_P4.splitlines(), 1) if "packet.extract(hdr.ipv4)" in l)
    first = _first_error_line(proc)
    assert first.startswith(f"{bad}:{line_no}:")
    assert "header ipv4_t of 159 bits (not a whole number of bytes)" in first
    assert "packet.extract(hdr.ipv4)" in proc.stderr.splitlines()[1]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("text", ["", "#include <core.p4>\nheader h_t { bit<8> a; }\n"])
def test_program_without_main_is_refused(text: str, tmp_path: Path) -> None:
    src = tmp_path / "nomain.p4"
    src.write_text(text)
    first = _first_error_line(run(src, "-o", tmp_path / "o"))
    assert first.startswith(f"{src}: error: ") and "no package instance named 'main'" in first


def test_empty_header_compiles(tmp_path: Path) -> None:
    prog = BASIC_P4.replace("struct metadata { }", "header e_t { }\nstruct metadata { }").replace(
        "ipv4_t ipv4; }", "ipv4_t ipv4; e_t e; }").replace(
        "state parse_ipv4 { packet.extract(hdr.ipv4);", "state parse_ipv4 { packet.extract(hdr.e); packet.extract(hdr.ipv4);")
    (tmp_path / "e.p4").write_text(prog)
    proc = run(tmp_path / "e.p4", "-o", tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_directory_as_source_is_named_a_directory(tmp_path: Path) -> None:
    proc = run(tmp_path, "-o", tmp_path / "o")
    assert proc.returncode == 2, proc
    assert proc.stderr.strip().splitlines()[-1] == f"innet-p4c: error: argument source: {str(tmp_path)!r} is a directory, not a file"


@pytest.mark.parametrize("bad, col", [(b"\xff", 1), (b"const bit<8> X = 1; \xe9", 21)])
def test_bytes_that_are_not_utf8_are_a_located_error(bad: bytes, col: int, tmp_path: Path) -> None:
    src = tmp_path / "latin.p4"
    src.write_bytes(b"#include <core.p4>\n" + bad + b"\n")
    first = _first_error_line(run(src, "-o", tmp_path / "o"))
    assert first == f"{src}:2:{col}: error: byte 0x{bad[-1]:02x} is not valid UTF-8 (byte {len(bad)} of the line)"


def test_latin1_in_a_comment_is_accepted_like_p4c(basic: Path, tmp_path: Path) -> None:
    basic.write_bytes(b"// caf\xe9 /* \xff */\n/* \xe9t\xe9\n */\n" + basic.read_bytes())
    proc = run(basic, "-o", tmp_path / "o")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "o" / "p4info.txtpb").read_text() == EXPECTED_BASIC_P4INFO
