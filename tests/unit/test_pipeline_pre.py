"""Packet replication engine and stateful externs."""

import pytest

from innet.switch.pipeline.errors import ControlPlaneError
from innet.switch.pipeline.externs import GREEN, RED, YELLOW, Counter, Meter, Register
from innet.switch.pipeline.pre import ReplicationEngine


def test_multicast_groups_and_handles_from_zero() -> None:
    pre = ReplicationEngine()
    pre.group_create(1)
    assert pre.node_create(10, [1, 2]) == 0
    assert pre.node_create(20, [3]) == 1
    pre.node_associate(1, 0)
    pre.node_associate(1, 1)
    assert pre.replicas(1) == [(10, 1), (10, 2), (20, 3)]
    assert pre.replicas(5) == []
    with pytest.raises(ControlPlaneError, match="no multicast group 9"):
        pre.node_associate(9, 0)
    pre.set_group(2, [(1, 4), (1, 5), (2, 6)])
    assert pre.replicas(2) == [(1, 4), (1, 5), (2, 6)]


def test_register_bounds_and_truncation() -> None:
    r = Register("Ing.r", 4, 16)
    r.write(1, 0x12345)
    assert r.read(1) == 0x2345
    with pytest.raises(ControlPlaneError, match="out of range"):
        r.read(4)
    s = Register("Ing.s", 1, 8, signed=True)
    s.write(0, 0xFF)
    assert s.read(0) == -1


def test_counter_counts_and_ignores_out_of_range() -> None:
    c = Counter("Ing.c", 2, "packets_and_bytes")
    c.count(1, 100)
    c.count(5, 100)
    assert c.read(1) == (1, 100)


def test_meter_trtcm_colors() -> None:
    now = [0.0]
    m = Meter("Ing.m", 1, "packets", clock=lambda: now[0])
    assert m.execute(0, 64) == GREEN  # unconfigured
    m.set_rates(0, cir=0.0, cburst=1, pir=0.0, pburst=2)
    assert [m.execute(0, 64) for _ in range(3)] == [GREEN, YELLOW, RED]
    m.set_rates(0, cir=1.0, cburst=1, pir=1.0, pburst=1)
    assert m.execute(0, 64) == GREEN
    assert m.execute(0, 64) == RED
    now[0] += 1.0
    assert m.execute(0, 64) == GREEN
