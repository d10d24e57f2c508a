"""innet.switch.device_config: the blob innet-p4c writes and the switch loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from finsy.proto import p4i

from innet.switch.device_config import (
    FORMAT,
    DeviceConfig,
    DeviceConfigError,
    p4info_digest,
    single_file_source,
)
from innet.switch.frontend.preprocess import preprocess_file, preprocess_source


def sample() -> DeviceConfig:
    return DeviceConfig("basic", '# 1 "basic.p4"\ncontrol C() { apply {} }\n', "ab" * 32)


def test_round_trip() -> None:
    cfg = sample()
    data = cfg.to_bytes()
    assert json.loads(data)["format"] == FORMAT
    assert DeviceConfig.from_bytes(data) == cfg


@pytest.mark.parametrize(
    "data,message",
    [
        (b"\x89PNG\r\n\x1a\n", r"not an innet device config \(expected JSON with format 'innet-device-config/1'"),
        (b'{"target": "bmv2", "program": {}}', r"unsupported device config format None"),
        (b"[1, 2]", r"top-level JSON is a list, not an object"),
        (json.dumps({"format": "innet-device-config/9"}).encode(), r"unsupported device config format 'innet-device-config/9'"),
        (json.dumps({"format": FORMAT, "program": "p", "source": 3, "p4info_sha256": ""}).encode(),
         r"field 'source' must be a string, got int"),
        (b"header h_t { bit<8> f; }", r"not an innet device config"),
    ],
)
def test_garbled_bytes_are_rejected_with_a_reason(data: bytes, message: str) -> None:
    with pytest.raises(DeviceConfigError, match=message):
        DeviceConfig.from_bytes(data)


def test_digest_is_deterministic_and_content_sensitive() -> None:
    a = p4i.P4Info()
    a.pkg_info.arch = "v1model"
    b = p4i.P4Info()
    b.CopyFrom(a)
    assert p4info_digest(a) == p4info_digest(b)
    b.tables.add().preamble.name = "t"
    assert p4info_digest(a) != p4info_digest(b)


def test_single_file_source_keeps_original_positions(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "defs.p4").write_text("// defs\n#define W 8\nheader h_t {\n  bit<W> f;\n}\n")
    main = tmp_path / "prog.p4"
    main.write_text('#include "inc/defs.p4"\n\n#ifdef EXTRA\nconst bit<W> X = EXTRA;\n#endif\nstruct s_t { h_t h; }\n')
    pp = preprocess_file(main, defines={"EXTRA": "5"})
    single = single_file_source(pp.text, pp.line_map)
    assert "#include" not in single and "#define" not in single
    assert "bit<8> f;" in single and "const bit<8> X = 5;" in single

    again = preprocess_source(single, filename="prog.p4")
    # every non-blank line of the re-preprocessed text maps to the same original position
    original = {(f, n): line for line, (f, n) in zip(pp.text.split("\n"), pp.line_map) if line.strip()}
    reparsed = {(f, n): line for line, (f, n) in zip(again.text.split("\n"), again.line_map) if line.strip()}
    assert reparsed == original
    assert (str(main), 6) in reparsed and reparsed[(str(main), 6)] == "struct s_t { h_t h; }"


WARNING_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in p, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { hdr.h.a = 300; sm.egress_spec = 1; }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out p, in headers hdr) { apply { p.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_a_cached_build_gives_the_front_end_warnings_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    from innet.switch import device_config, frontend, startcache

    monkeypatch.setenv(startcache.CACHE_ENV, str(tmp_path / "cache"))
    src = tmp_path / "warns.p4"
    src.write_text(WARNING_PROGRAM)
    compiled: list[str] = []
    real = frontend.compile_source

    def counting(text: str, filename: str = "<string>", *a: object, **kw: object) -> object:
        compiled.append(filename)
        return real(text, filename, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(frontend, "compile_source", counting)
    seen = []
    for _ in range(2):
        caplog.clear()
        with caplog.at_level("WARNING", logger=device_config.FRONTEND_LOGGER):
            build = device_config.build(src)
        seen.append([r.getMessage() for r in caplog.records if r.name == device_config.FRONTEND_LOGGER])
    assert len(compiled) == 1, "the second build should come from the start-up cache"
    assert seen[0] and all(": warning: " in m and "300" in m for m in seen[0]), seen[0]
    assert seen[1] == seen[0]
    assert build.program.warnings == tuple(seen[0])
