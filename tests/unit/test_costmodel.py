"""innet.testbed.core.bounds: ring and INA bounds against hand-computed values (docs/design.md, "Benchmarks")."""

from __future__ import annotations

import math

import pytest

from innet.testbed.core.bounds import (
    INNET_FRAME_OVERHEAD,
    LinkModel,
    goodput_bps,
    ina_allreduce,
    ring_allreduce,
)

GBPS = LinkModel(bw_bps=1e9)


def test_ring_sends_two_n_minus_one_over_n_of_the_message() -> None:
    for n in (2, 4, 8):
        est = ring_allreduce(n, 1 << 20, GBPS)
        assert est.payload_up == est.payload_down == math.ceil(2 * (n - 1) * (4 << 20) / n)
        assert est.wire_up > est.payload_up  # headers


def test_ring_4mb_4_hosts_1gbps_is_about_50ms() -> None:
    est = ring_allreduce(4, 1 << 20, GBPS)
    # 6 MiB of payload at 1 Gbit/s is 50.3 ms; TCP/IP/Ethernet headers add ~4.5%.
    assert 6 * 2**20 * 8 / 1e9 < est.time_s < 1.05 * 6 * 2**20 * 8 / 1e9
    assert est.bound == "link"
    # 1448-byte segments: 2*(n-1) steps of ceil(1 MiB / 1448) segments each.
    assert est.packets_up == 6 * math.ceil((1 << 20) / 1448)


def test_ina_sends_one_message_each_way_in_k_value_packets() -> None:
    est = ina_allreduce(4, 1 << 20, 64, GBPS)
    assert est.payload_up == est.payload_down == 4 << 20
    assert est.packets_up == (1 << 20) // 64
    assert est.wire_up == est.packets_up * (INNET_FRAME_OVERHEAD + 256)
    assert est.switch_packets == 4 * est.packets_up
    assert est.time_s == pytest.approx(est.wire_up * 8 / 1e9)
    assert est.time_s < ring_allreduce(4, 1 << 20, GBPS).time_s


def test_ina_partial_last_packet_is_padded_to_k() -> None:
    est = ina_allreduce(2, 65, 64, GBPS)
    assert est.packets_up == 2
    assert est.wire_up == 2 * (66 + 256)  # Ethernet+IPv4+UDP (42) + innet header (24) + K values


def test_switch_rate_bounds_ina_when_slower_than_links() -> None:
    net = LinkModel(bw_bps=1e9, switch_pps=20_000)
    est = ina_allreduce(4, 1 << 16, 64, net)
    assert est.bound == "switch"
    assert est.time_s == pytest.approx(4 * 1024 / 20_000)


def test_loopback_without_link_rate_is_switch_bound_or_zero() -> None:
    assert ina_allreduce(2, 1024, 64, LinkModel(bw_bps=None)).time_s == 0
    assert ina_allreduce(2, 1024, 64, LinkModel(bw_bps=None)).bound == "none"
    est = ina_allreduce(2, 1024, 64, LinkModel(bw_bps=None, switch_pps=1000))
    assert est.time_s == pytest.approx(32 / 1000) and est.bound == "switch"


def test_latency_and_loss() -> None:
    lossy = LinkModel(bw_bps=1e9, latency_s=1e-3, loss=0.05)
    ring = ring_allreduce(4, 1024, lossy)
    ring0 = ring_allreduce(4, 1024, LinkModel(bw_bps=1e9, latency_s=1e-3))
    assert ring.wire_up == pytest.approx(ring0.wire_up / 0.95)
    assert ring0.time_s >= 2 * 3 * 2 * 1e-3
    assert ina_allreduce(4, 1024, 64, lossy).time_s >= 2e-3


def test_errors_name_the_value() -> None:
    with pytest.raises(ValueError, match=r"workers=1: an allreduce needs at least 2"):
        ring_allreduce(1, 10, GBPS)
    with pytest.raises(ValueError, match=r"elements=0"):
        ina_allreduce(2, 0, 64, GBPS)
    with pytest.raises(ValueError, match=r"k=1024: a 4148-byte innet packet exceeds mtu 1500"):
        ina_allreduce(2, 4096, 1024, GBPS)
    with pytest.raises(ValueError, match=r"loss=1"):
        LinkModel(bw_bps=1e9, loss=1)
    with pytest.raises(ValueError, match=r"bw_bps=0"):
        LinkModel(bw_bps=0)


def test_goodput() -> None:
    assert goodput_bps(1 << 20, 0.5) == pytest.approx((4 << 20) * 8 / 0.5)
    assert goodput_bps(10, 0.0) == 0.0
