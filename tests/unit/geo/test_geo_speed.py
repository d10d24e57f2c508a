"""Device speeds: the probe, speeds relative to the planning process, the
speed-aware OP-Fence plan against the plan made assuming equal speeds, and bad speeds."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest

from innet.cli import main
from innet.host.geo.estimator import measure
from innet.host.geo.graph import mlp
from innet.host.geo.opfence import SiteNetwork, opfence, predict
from innet.host.geo.speed import SpeedError, check_speeds, probe, relative_speeds
from innet.testbed.geo.bench import GeoBenchConfig, GeoBenchError, measure_speeds


def _net(speed: dict[str, float] | None = None) -> SiteNetwork:
    """Three single-device sites on equally fast links: only compute tells them apart."""
    devs = ("a", "b", "c")
    bw = {p: 1000.0 for p in itertools.combinations(devs, 2)}
    delay = {p: 1.0 for p in itertools.combinations(devs, 2)}
    return SiteNetwork(devs, bw, delay, speed)


def _workload():  # 6 operators of 2 ms each way, so compute dominates the 1 Gbit/s links
    g = mlp([64, 64, 64, 64, 10])  # fc0 relu0 fc1 relu1 fc2 relu2 fc3 loss
    w = measure(g, g.init_params(0), {"x": np.zeros((8, 64), np.float32), "y": np.zeros(8, np.int64)}, repeats=1)
    return g, replace(w, costs=tuple(replace(c, fwd_s=2e-3, bwd_s=2e-3) for c in w.costs))


def test_probe_times_the_operator_for_the_duration_asked() -> None:
    per, count = probe(0.05)
    assert count >= 1 and per > 0
    assert per * count >= 0.05  # ran at least the duration (whole probes)


def test_speeds_are_relative_to_the_reference_process() -> None:
    assert relative_speeds(2e-3, {"a": 2e-3, "b": 8e-3, "c": 1e-3}) == {"a": 1.0, "b": 0.25, "c": 2.0}
    with pytest.raises(SpeedError, match="probe time of site 'b' is 0.0"):
        relative_speeds(1e-3, {"b": 0.0})


@pytest.mark.parametrize("speeds, message", [
    ({"b": 0.0}, "speed of site 'b' is 0.0: must be a positive number"),
    ({"b": -1.0}, "speed of site 'b' is -1.0: must be a positive number"),
    ({"b": math.nan}, "speed of site 'b' is nan"),
    ({"q": 1.0}, "speed for site 'q': no such site (sites: a, b, c)"),
])
def test_bad_speeds_name_the_site_and_value(speeds: dict[str, float], message: str) -> None:
    with pytest.raises(SpeedError) as error:
        check_speeds(speeds, ["a", "b", "c"])
    assert message in str(error.value)


def test_predict_divides_each_stage_compute_by_its_device_speed() -> None:
    g, w = _workload()
    even = predict(g, w, _net(), [("a",), ("b",), ("c",)], (2, 5))
    slow = predict(g, w, _net({"b": 0.25}), [("a",), ("b",), ("c",)], (2, 5))
    assert slow.stage_compute_s[1] == pytest.approx(4 * even.stage_compute_s[1])
    assert slow.stage_compute_s[0] == pytest.approx(even.stage_compute_s[0])


def test_the_speed_aware_plan_moves_work_off_the_slow_site_and_predicts_a_faster_step() -> None:
    g, w = _workload()
    speeds = _net({"b": 0.2})
    clusters = [("a",), ("b",), ("c",)]
    blind = opfence(g, w, _net(), clusters, microbatches=4)
    aware = opfence(g, w, speeds, clusters, microbatches=4)
    # the equal-speed plan, scored at the true speeds, is what running it would cost
    blind_true = predict(g, w, speeds, blind.order, blind.cuts, 4)

    def ops_on_b(plan):  # operators (besides the loss) placed on the slow site
        i = plan.order.index(("b",))
        return len([n for n in plan.stage_nodes[i] if n != "loss"])

    assert ops_on_b(aware) < ops_on_b(blind)
    assert aware.step_s < 0.8 * blind_true.step_s
    # with equal speeds the speed-aware planner gives back the same plan
    assert opfence(g, w, _net({"a": 1.0, "b": 1.0, "c": 1.0}), clusters, 4).cuts == blind.cuts


class _Recorder:
    """Stands in for the cgroup quotas: records which process went to which site."""

    def __init__(self) -> None:
        self.added: list[tuple[str, int]] = []

    def add(self, site: str, pid: int) -> None:
        self.added.append((site, pid))


def test_every_site_is_probed_in_its_own_process() -> None:
    config = GeoBenchConfig(speeds=(("b", 0.5),), probe_s=0.05)
    quotas = _Recorder()
    speeds, probes = measure_speeds(config, quotas)
    assert sorted(speeds) == ["a", "b", "c"] and all(v > 0 for v in speeds.values())
    assert [s for s, _ in quotas.added] == ["a", "b", "c"]
    assert len({pid for _, pid in quotas.added}) == 3
    assert probes["reference"] > 0 and speeds["a"] == pytest.approx(probes["reference"] / probes["a"])


@pytest.mark.parametrize("argv, message", [
    (["--speeds", "b:0"], "argument --speeds: speed of site 'b' is 0: must be a positive number"),
    (["--speeds", "b:-0.5"], "argument --speeds: speed of site 'b' is -0.5: must be a positive number"),
    (["--speeds", "b"], "argument --speeds: speed 'b': expected SITE:CPU_SHARE"),
    (["--speeds", "q:0.5"], "innet geo bench: speed for site 'q': no such site (sites: a, b, c)"),
    (["--straggler", "q:3:0.1"], "innet geo bench: speed for site 'q': no such site"),
    (["--straggler", "b:3:0"], "argument --straggler: straggler 'b:3:0': CPU share 0 must be a positive number"),
    (["--straggler", "b:500:0.1"], "straggler step 500: must be within 0..99"),
    (["--runs", "uniform/none"], "the equal-speed plan only differs with --speeds"),
    (["--replan"], "innet geo bench: --replan: needs --straggler SITE:STEP:SHARE with STEP + 17 < --steps"),
    (["--replan", "--straggler", "b:95:0.1"], "with STEP + 17 < --steps"),
    (["--rate-change", "a-b:5:2"], "innet geo bench: --rate-change: changes a Mininet WAN link with tc: add --backend mininet"),
    (["--rate-change", "ab:5:2"], "argument --rate-change: rate change 'ab:5:2': expected SITE-SITE:STEP:MBIT_S"),
    (["--rate-change", "a-b:5:0"], "argument --rate-change: rate change 'a-b:5:0': 0 Mbit/s must be within (0, 1000]"),
    (["--backend", "mininet", "--rate-change", "a-q:5:2"], "innet geo bench: rate change: no site 'q' (sites: a, b, c)"),
    (["--backend", "mininet", "--rate-change", "a-b:100:2"], "innet geo bench: rate change step 100: must be within 0..99"),
])
def test_bad_speeds_on_the_cli_are_one_line_and_exit_2(argv: list[str], message: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["geo", "bench", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and "Traceback" not in "\n".join(err), err


def test_plan_refuses_speeds_for_an_unknown_site(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["geo", "plan", "--speeds", "a:1,zz:2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "innet geo plan: speed for site 'zz': no such site (sites: a, b, c)"


def test_config_refuses_bad_speeds_before_anything_runs() -> None:
    with pytest.raises(GeoBenchError, match="speed of site 'a' is 0"):
        GeoBenchConfig(speeds=(("a", 0.0),))


def test_without_root_speeds_are_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import innet.testbed.geo.cpuquota as cpuquota

    monkeypatch.setattr(cpuquota.os, "geteuid", lambda: 1000)
    assert main(["geo", "plan", "--speeds", "b:0.5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["innet geo plan: --speeds: CPU quotas per site need root (cgroups)"]


def test_quota_keeps_a_short_period_above_the_kernel_floor() -> None:
    from innet.testbed.geo.cpuquota import CpuQuotaError, quota_for

    assert quota_for(0.25) == (2500, 10_000)
    assert quota_for(2.0) == (20_000, 10_000)  # two CPUs' worth
    assert quota_for(0.05) == (1000, 20_000)  # 1 ms is the least quota the kernel takes
    assert quota_for(None) == (-1, 10_000)
    with pytest.raises(CpuQuotaError, match="at least 0.001 of a CPU"):
        quota_for(0.0001)
