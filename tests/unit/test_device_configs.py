"""innet.switch.p4rt_codec.device_configs: what switch a device config is for, told from
markers without parsing, and the one-line reason a switch cannot run one."""

from __future__ import annotations

import time

import pytest

from innet.switch.device_config import DeviceConfig
from innet.switch.p4rt_codec.device_configs import BMV2_JSON_REFUSAL, config_kind, describe, mismatch

from testkit.fake_p4c import bmv2_json

INNET = DeviceConfig("prog", "control C() { apply { } }\n", "ab" * 32).to_bytes()
P4 = b"#include <core.p4>\ncontrol C() { apply { } }\n"


@pytest.mark.parametrize(("blob", "kind"), [
    (INNET, "innet"),
    (bmv2_json(), "bmv2"),
    (b"  \n" + bmv2_json(), "bmv2"),
    (P4, "p4"),
    (b'{"format": "something-else"}', "other"),
    (b"\xff\xfe\x00binary", "other"),
    (b"   ", "other"),
])
def test_kind_of_each_config(blob: bytes, kind: str) -> None:
    assert config_kind(blob) == kind


def test_a_bmv2_json_the_size_of_innet_p4s_is_told_without_parsing_it() -> None:
    blob = bmv2_json(10_807_613)
    started = time.perf_counter()
    assert config_kind(blob) == "bmv2"
    print(f"classified a {len(blob)}-byte BMv2 JSON in {1e3 * (time.perf_counter() - started):.3f} ms")
    assert describe(blob) == "BMv2 JSON (p4c-bm2-ss output), 10.8 MB"


def test_innet_switch_refuses_bmv2_json_by_name() -> None:
    why = mismatch(bmv2_json(4_000_000), "innet")
    assert why == f"{BMV2_JSON_REFUSAL} (4.0 MB)"
    assert mismatch(INNET, "innet") is None and mismatch(P4, "innet") is None


def test_bmv2_refuses_innet_configs_and_source() -> None:
    for blob, what in ((INNET, "innet device config (innet-p4c output)"), (P4, "P4 source text")):
        why = mismatch(blob, "bmv2")
        assert why is not None and why.startswith(f"device config is {what}, ")
        assert "simple_switch_grpc runs only p4c-bm2-ss's JSON" in why
    assert mismatch(bmv2_json(), "bmv2") is None


def test_unknown_kinds_and_implementations_are_left_to_the_switch() -> None:
    assert mismatch(b'{"format": "something-else"}', "innet") is None
    assert mismatch(bmv2_json(), "tofino") is None
