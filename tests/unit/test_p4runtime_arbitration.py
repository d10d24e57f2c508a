"""Client arbitration rules (P4Runtime spec, "Rules for Handling MasterArbitrationUpdate")."""

import grpc
import pytest
from finsy.proto import U128, p4r, rpc_code

from innet.switch.p4runtime.arbitration import Arbitrator
from innet.switch.p4runtime.errors import P4RuntimeError


def update(election_id: int | None, device_id: int = 1, role: str = "") -> p4r.MasterArbitrationUpdate:
    msg = p4r.MasterArbitrationUpdate(device_id=device_id)
    if election_id is not None:
        msg.election_id.CopyFrom(U128.encode(election_id))
    if role:
        msg.role.name = role
    return msg


def statuses(notifications) -> dict:
    return {c: (n.status.code, U128.decode(n.election_id) if n.HasField("election_id") else None)
            for c, n in notifications}


def test_first_controller_becomes_primary():
    arb = Arbitrator(1)
    out = statuses(arb.arbitrate("a", update(5)))
    assert out == {"a": (rpc_code.OK, 5)}
    assert arb.is_primary("", 5) and not arb.is_primary("", 4)


def test_lower_election_id_is_backup_told_already_exists():
    arb = Arbitrator(1)
    arb.arbitrate("a", update(5))
    out = statuses(arb.arbitrate("b", update(3)))
    assert out == {"b": (rpc_code.ALREADY_EXISTS, 5)}
    assert arb.primary() == "a"


def test_higher_election_id_takes_over_and_everybody_is_told():
    arb = Arbitrator(1)
    arb.arbitrate("a", update(5))
    out = statuses(arb.arbitrate("b", update(9)))
    assert out == {"a": (rpc_code.ALREADY_EXISTS, 9), "b": (rpc_code.OK, 9)}
    assert arb.is_primary("", 9) and not arb.is_primary("", 5)


def test_duplicate_live_election_id_is_invalid_argument():
    arb = Arbitrator(1)
    arb.arbitrate("a", update(5))
    with pytest.raises(P4RuntimeError, match="election id 5 is already used") as info:
        arb.arbitrate("b", update(5))
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert not arb.is_member("b")


def test_same_election_id_in_other_role_is_fine():
    arb = Arbitrator(1)
    arb.arbitrate("a", update(5))
    out = statuses(arb.arbitrate("b", update(5, role="other")))
    assert out == {"b": (rpc_code.OK, 5)}


def test_primary_leaving_leaves_no_primary_until_higher_or_equal_id():
    arb = Arbitrator(1)
    arb.arbitrate("a", update(5))
    arb.arbitrate("b", update(3))
    out = statuses(arb.leave("a"))
    assert out == {"b": (rpc_code.NOT_FOUND, 5)}
    assert arb.primary() is None
    # re-sending a lower id keeps it backup with NOT_FOUND
    assert statuses(arb.arbitrate("b", update(4))) == {"b": (rpc_code.NOT_FOUND, 5)}
    # an id equal to the highest seen makes it primary
    assert statuses(arb.arbitrate("b", update(5))) == {"b": (rpc_code.OK, 5)}


def test_primary_downgrading_itself_notifies_all():
    arb = Arbitrator(1)
    arb.arbitrate("a", update(5))
    arb.arbitrate("b", update(3))
    out = statuses(arb.arbitrate("a", update(2)))
    assert out == {"a": (rpc_code.NOT_FOUND, 5), "b": (rpc_code.NOT_FOUND, 5)}


def test_no_election_id_is_backup_and_election_id_unset_before_any_primary():
    arb = Arbitrator(1)
    out = arb.arbitrate("a", update(None))
    assert out[0][1].status.code == rpc_code.NOT_FOUND
    assert not out[0][1].HasField("election_id")


def test_unknown_device_is_not_found():
    arb = Arbitrator(1)
    with pytest.raises(P4RuntimeError, match="no device with id 7") as info:
        arb.arbitrate("a", update(1, device_id=7))
    assert info.value.code == grpc.StatusCode.NOT_FOUND


def test_role_change_on_live_stream_is_failed_precondition():
    arb = Arbitrator(1)
    arb.arbitrate("a", update(1))
    with pytest.raises(P4RuntimeError, match="role changed") as info:
        arb.arbitrate("a", update(1, role="x"))
    assert info.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_backup_leaving_sends_nothing():
    arb = Arbitrator(1)
    arb.arbitrate("a", update(5))
    arb.arbitrate("b", update(3))
    assert arb.leave("b") == []
    assert arb.leave("unknown") == []
