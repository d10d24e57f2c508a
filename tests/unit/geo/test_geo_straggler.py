"""Online straggler detection: a sustained slowdown of one stage is found at the right step,
one slow step or a uniformly bigger stage is not."""

from __future__ import annotations

import pytest

from innet.host.geo.straggler import StragglerConfig, StragglerDetector, StragglerError


def _feed(detector: StragglerDetector, series: dict[int, list[float]]) -> list[tuple[int, int]]:
    found = []
    for step in range(max(len(v) for v in series.values())):
        for stage, values in series.items():
            d = detector.observe(stage, step, values[step])
            if d is not None:
                found.append((d.stage, d.step))
    return found


def test_a_sustained_slowdown_is_found_where_and_when_it_happens() -> None:
    fast, big = [0.010] * 30, [0.040] * 30
    slowed = [0.010] * 15 + [0.030] * 15  # the device slows after step 14
    detector = StragglerDetector(StragglerConfig(threshold=1.5, window=5, warmup=3))
    assert _feed(detector, {0: fast, 1: slowed, 2: big}) == [(1, 17)]  # 3 of the last 5 steps slow
    assert detector.detections[0].factor == pytest.approx(3.0)


def test_one_slow_step_is_not_a_straggler() -> None:
    spiky = [0.010] * 12 + [0.100] + [0.010] * 12
    assert _feed(StragglerDetector(), {0: spiky}) == []


def test_bad_settings_are_named() -> None:
    with pytest.raises(StragglerError, match="threshold 1.0: must be above 1"):
        StragglerConfig(threshold=1.0)
    with pytest.raises(StragglerError, match="window 0"):
        StragglerConfig(window=0)


def test_a_machine_wide_slowdown_is_not_a_straggler() -> None:
    """Every stage 2x slower (the machine got busier): nobody is singled out; one stage 4x
    slower among them is."""
    busier = {i: [0.010] * 12 + [0.020] * 12 for i in range(3)}
    assert _feed(StragglerDetector(), busier) == []
    busier[2] = [0.010] * 12 + [0.040] * 12
    assert [s for s, _ in _feed(StragglerDetector(), busier)] == [2]


def test_stages_running_ahead_of_the_last_are_still_compared() -> None:
    """In a pipeline the first stage reports step n+1 or n+2 before the last reports step n, so
    the stages' counts are never equal at a record; the slowdown is still found, at its step."""
    fast = [0.010] * 30
    slowed = [0.010] * 15 + [0.030] * 15
    series = {0: fast, 1: slowed, 2: fast}
    lead = {0: 2, 1: 1, 2: 0}  # stage 0 runs two steps ahead of stage 2
    detector = StragglerDetector(StragglerConfig(threshold=1.5, window=5, warmup=3))
    found = []
    for tick in range(32):
        for stage, values in series.items():
            step = tick + lead[stage] - 2
            if 0 <= step < len(values):
                d = detector.observe(stage, step, values[step])
                if d is not None:
                    found.append((d.stage, d.step))
    assert found == [(1, 17)]
