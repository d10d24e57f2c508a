"""InnetTarget device-config recognition (the rest is covered end to end in integration)."""

import pytest

from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.p4runtime.target_api import TargetError


def test_bmv2_json_is_rejected_by_name():
    bmv2 = b'{"header_types": [], "headers": [], "pipelines": [{"name": "ingress"}]}'
    with pytest.raises(TargetError, match=r"BMv2 JSON \(p4c-bm2-ss output\).*innet-p4c"):
        InnetTarget().load(None, bmv2)


def test_other_json_names_the_expected_format():
    with pytest.raises(TargetError, match="innet-device-config/1"):
        InnetTarget().load(None, b'{"format": "something-else"}')


def test_binary_garbage_is_neither_config_nor_source():
    with pytest.raises(TargetError, match="neither an innet device config"):
        InnetTarget().load(None, b"\xff\xfe\x00binary")
