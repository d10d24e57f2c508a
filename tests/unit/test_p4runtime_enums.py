"""Enum fields of P4Runtime requests: a number the proto does not define is a malformed
request (INVALID_ARGUMENT naming the field and the value), never an INTERNAL error."""

import grpc
import pytest
from finsy.proto import p4r

from innet.switch.p4runtime.device import Device
from innet.switch.p4runtime.errors import P4RuntimeError

from testkit.fake_target import FakeTarget, sample_p4info

Set = p4r.SetForwardingPipelineConfigRequest
Get = p4r.GetForwardingPipelineConfigRequest


@pytest.fixture
def device() -> Device:
    d = Device(1, FakeTarget())
    d.set_pipeline(Set.VERIFY_AND_COMMIT, p4r.ForwardingPipelineConfig(
        p4info=sample_p4info(), p4_device_config=b"prog"))
    return d


@pytest.mark.parametrize("value", [3, 99, -1])
def test_undefined_write_atomicity_is_invalid_argument(device: Device, value: int):
    with pytest.raises(P4RuntimeError, match=rf"Write atomicity {value} is not one of CONTINUE_ON_ERROR, "
                                             r"ROLLBACK_ON_ERROR, DATAPLANE_ATOMIC") as info:
        device.write([], value)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("value", [p4r.WriteRequest.ROLLBACK_ON_ERROR, p4r.WriteRequest.DATAPLANE_ATOMIC])
def test_every_defined_atomicity_is_supported(device: Device, value: int):
    assert device.write([], value) == []


@pytest.mark.parametrize("value", [0, 4, 77])
def test_undefined_update_type_is_invalid_argument(device: Device, value: int):
    update = p4r.Update(type=value, entity=p4r.Entity(table_entry=p4r.TableEntry(table_id=0x02000001)))
    (result,) = device.write([update])
    assert result is not None and result.code == grpc.StatusCode.INVALID_ARGUMENT
    assert f"update type {value} is not INSERT, MODIFY or DELETE" in result.message


@pytest.mark.parametrize("value", [0, 6, 1000])
def test_undefined_set_pipeline_action_is_invalid_argument(device: Device, value: int):
    with pytest.raises(P4RuntimeError, match=rf"action {value} is not one of VERIFY") as info:
        device.set_pipeline(value, p4r.ForwardingPipelineConfig(p4info=sample_p4info(), p4_device_config=b"p"))
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("value", [4, 12345])
def test_undefined_get_response_type_is_invalid_argument(device: Device, value: int):
    with pytest.raises(P4RuntimeError, match=rf"unknown response_type {value}") as info:
        device.get_pipeline(value)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
