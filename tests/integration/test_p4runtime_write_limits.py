"""A failed Write batch whose per-update errors would exceed gRPC's metadata limit: a
default gRPC client must still get a readable answer, never the transport's
RESOURCE_EXHAUSTED, and huge failing batches must not hold a traceback per update."""

from __future__ import annotations


import grpc
import pytest
from finsy.proto import p4r, rpc_code, rpc_status

from innet.switch.p4runtime.device import Device
from innet.switch.p4rt_codec.status import STATUS_DETAILS_KEY, decode_write_errors
from innet.switch.p4runtime.errors import MAX_DETAILED_UPDATES, STATUS_DETAILS_BUDGET
from innet.switch.server import SwitchOptions, SwitchServer

from testkit.fake_target import FakeTarget, sample_p4info

from testkit.p4rt_loopback import Client, arbitration, insert, lpm_entry


@pytest.fixture
def client():
    with SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), FakeTarget()) as server:
        c = Client(server.grpc_address)  # a default channel: 8 KiB metadata soft limit
        arbitration(c.stream(1))
        c.set_pipeline()
        yield c
        c.close()


def bad(i: int) -> p4r.Update:
    return insert(lpm_entry(dst=0x0A000000 + (i << 8), port=0x300))  # port does not fit 9 bits


def good(i: int) -> p4r.Update:
    cell = p4r.CounterEntry(counter_id=0x12000001, data=p4r.CounterData(packet_count=i))
    cell.index.index = i % 8
    return p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(counter_entry=cell))


def failed_write(client: Client, updates: list[p4r.Update]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        client.write(*updates)
    return info.value


def test_many_failures_keep_per_update_codes_within_the_budget(client: Client):
    n = MAX_DETAILED_UPDATES
    error = failed_write(client, [bad(i) for i in range(n)])
    assert error.code() == grpc.StatusCode.UNKNOWN, error.details()
    trailer = dict(error.trailing_metadata())[STATUS_DETAILS_KEY]
    assert len(trailer) <= STATUS_DETAILS_BUDGET
    errors = decode_write_errors(rpc_status.Status.FromString(trailer))
    assert len(errors) == n and {e.canonical_code for e in errors} == {rpc_code.INVALID_ARGUMENT}
    assert "does not fit in 9 bits" in errors[0].message
    kept = [e.message for e in errors if e.message]
    assert len(kept) >= 3 and errors[len(kept) - 1].message and not errors[-1].message  # the first ones
    assert error.details().startswith(f"{n} of {n} updates failed; first: update 0: INVALID_ARGUMENT")


def test_batch_too_large_for_details_gets_one_clear_status(client: Client):
    updates = [good(i) for i in range(1000)]
    updates[700] = bad(700)
    updates[900] = bad(900)
    error = failed_write(client, updates)
    assert error.code() == grpc.StatusCode.UNKNOWN, error.details()
    assert error.details().startswith(
        f"2 of 1000 updates failed; a batch of 1000 updates is too large for per-update errors within "
        f"gRPC's metadata limit: split it into Writes of at most {MAX_DETAILED_UPDATES} updates; "
        "first failures: update 700: INVALID_ARGUMENT: ")
    assert "update 900: INVALID_ARGUMENT" in error.details()
    status = rpc_status.Status.FromString(dict(error.trailing_metadata())[STATUS_DETAILS_KEY])
    assert not status.details  # never a partial list: clients read details by position


def test_failed_updates_of_a_huge_batch_hold_no_traceback():
    device = Device(1, FakeTarget())
    device.set_pipeline(p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                        p4r.ForwardingPipelineConfig(p4info=sample_p4info(), p4_device_config=b"prog"))
    results = device.write([bad(i) for i in range(2000)])
    assert all(r is not None and r.__traceback__ is None for r in results)
