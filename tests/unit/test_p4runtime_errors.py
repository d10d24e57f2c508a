"""innet.switch.p4runtime.errors: the wire form of per-update Write errors, both ways
(the server packs them, innet.controller.client reads them with the same helpers)."""

from __future__ import annotations

import grpc
import pytest
from finsy.proto import p4r, rpc_status

from innet.switch.p4rt_codec.status import (
    STATUS_DETAILS_KEY,
    decode_write_errors,
    rpc_code_of,
    status_code_of,
    status_details,
)
from innet.switch.p4runtime.errors import already_exists, write_error_status


def test_status_codes_round_trip():
    for code in grpc.StatusCode:
        assert status_code_of(rpc_code_of(code)) is code
    assert status_code_of(99) is grpc.StatusCode.UNKNOWN


def test_write_errors_survive_the_trailer():
    status = write_error_status([None, already_exists("table 'ipv4_lpm': entry exists")])
    trailers = (("other-bin", b"\x00"), (STATUS_DETAILS_KEY, status.SerializeToString()))
    read = status_details(trailers)
    assert read is not None and read.code == rpc_code_of(grpc.StatusCode.UNKNOWN)
    assert read.message == "1 of 2 updates failed; first: update 1: ALREADY_EXISTS: table 'ipv4_lpm': entry exists"
    errors = decode_write_errors(read)
    assert [(status_code_of(e.canonical_code), e.message) for e in errors] == [
        (grpc.StatusCode.OK, ""), (grpc.StatusCode.ALREADY_EXISTS, "table 'ipv4_lpm': entry exists")]
    assert status_details(None) is None and status_details([("x", "y")]) is None


def test_a_detail_that_is_not_a_p4_error_is_refused():
    status = rpc_status.Status(code=2)
    status.details.add().Pack(p4r.PacketOut(payload=b"x"))
    with pytest.raises(ValueError, match="p4.v1.PacketOut' is not p4.v1.Error"):
        decode_write_errors(status)


def test_long_messages_are_cut_to_keep_the_details_within_budget():
    from innet.switch.p4runtime.errors import MESSAGE_CHARS, STATUS_DETAILS_BUDGET, invalid

    results = [invalid(f"update {i}: " + "x" * 5000) for i in range(60)]
    status = write_error_status(results)
    assert status.ByteSize() <= STATUS_DETAILS_BUDGET
    errors = decode_write_errors(status)
    assert len(errors) == 60 and all(e.canonical_code == rpc_code_of(grpc.StatusCode.INVALID_ARGUMENT) for e in errors)
    assert errors[0].message.startswith("update 0: xxx") and errors[0].message.endswith("...")
    assert len(errors[0].message) == MESSAGE_CHARS and not errors[-1].message
    assert len(status.message) <= 900
