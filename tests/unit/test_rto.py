"""innet.host.agent.rto: RFC 6298 estimator, clamping, TCP-style back-off and its reset."""

from __future__ import annotations

import pytest

from innet.host.agent.rto import MAX_BACKOFF, RtoBounds, RtoEstimator

BOUNDS = RtoBounds(initial_rto=0.05, min_rto=0.01, max_rto=1.0, granularity=0.001)


def test_initial_rto_before_any_sample() -> None:
    est = RtoEstimator(BOUNDS)
    assert est.srtt is None and est.base == 0.05 and est.rto == 0.05


def test_jacobson_karels_updates() -> None:
    est = RtoEstimator(BOUNDS)
    est.sample(0.004)  # first: SRTT = R, RTTVAR = R/2
    assert est.srtt == pytest.approx(0.004) and est.rttvar == pytest.approx(0.002)
    assert est.base == pytest.approx(0.004 + 4 * 0.002)
    est.sample(0.012)  # RTTVAR = 3/4 * 0.002 + 1/4 * |0.004 - 0.012|, then SRTT = 7/8 * 0.004 + 1/8 * 0.012
    assert est.rttvar == pytest.approx(0.0015 + 0.002)
    assert est.srtt == pytest.approx(0.0035 + 0.0015)
    assert est.base == pytest.approx(0.005 + 4 * 0.0035)
    assert est.samples == 2


def test_clamped_to_min_and_max_and_granularity() -> None:
    est = RtoEstimator(BOUNDS)
    for _ in range(50):
        est.sample(0.001)  # RTTVAR decays towards 0: G keeps a variance term, min_rto the floor
    assert est.rttvar < 1e-4
    assert est.base == 0.01
    fast = RtoEstimator(RtoBounds(initial_rto=0.05, min_rto=0.0001, max_rto=1.0, granularity=0.001))
    for _ in range(50):
        fast.sample(0.002)
    assert fast.base == pytest.approx(0.002 + 0.001, rel=1e-3)  # SRTT + max(G, 4 RTTVAR)
    slow = RtoEstimator(BOUNDS)
    slow.sample(2.0)
    assert slow.base == 1.0


def test_backoff_doubles_once_per_interval_and_is_capped() -> None:
    est = RtoEstimator(BOUNDS)
    est.sample(0.004)
    base = est.base
    assert est.timed_out(now=10.0)
    assert est.rto == pytest.approx(2 * base) and est.backoff == 1
    # the rest of a window expiring in the same interval counts once
    assert not est.timed_out(now=10.0 + 2 * base - 1e-6)
    assert est.backoff == 1
    assert est.timed_out(now=10.0 + 2 * base + 1e-9)
    assert est.rto == pytest.approx(4 * base)
    now = 20.0
    for _ in range(40):
        est.timed_out(now)
        now += 2.0
    assert est.rto == 1.0 and est.backoff == MAX_BACKOFF  # capped at max_rto, exponent bounded


def test_valid_sample_resets_backoff() -> None:
    est = RtoEstimator(BOUNDS)
    est.sample(0.004)
    base = est.base
    for i in range(5):
        est.timed_out(now=float(i))
    assert est.backoff == 5 and est.rto == pytest.approx(32 * base)
    est.sample(0.004)
    assert est.backoff == 0
    assert est.rto == est.base
    assert est.timed_out(now=5.0)  # the interval rule starts afresh after the reset


def test_undo_takes_back_one_doubling() -> None:
    est = RtoEstimator(BOUNDS)
    est.timed_out(now=0.0)
    est.timed_out(now=1.0)
    assert est.backoff == 2
    est.undo()
    assert est.backoff == 1 and est.rto == pytest.approx(0.1)
    est.undo()
    est.undo()
    assert est.backoff == 0 and est.rto == 0.05


def test_bounds_validation() -> None:
    with pytest.raises(ValueError, match=r"min_rto 0.5 must be within 0 < min_rto <= max_rto \(0.1\)"):
        RtoBounds(initial_rto=0.05, min_rto=0.5, max_rto=0.1)
    with pytest.raises(ValueError, match=r"initial_rto 2.0 is outside \(0, max_rto 1.0\]"):
        RtoBounds(initial_rto=2.0)
    with pytest.raises(ValueError, match="granularity -1"):
        RtoBounds(granularity=-1)
