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
