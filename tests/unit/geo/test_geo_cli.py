"""``innet geo plan`` and its input errors (one line, exit status 2)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from innet.cli import main
from innet.testbed.core.machine import Machine

MACHINE = Machine("h", "TestCPU", 2, "6.1", "Linux", "3.11.9", "0.5 0.4 0.3", None, None)


def test_geo_plan_prints_both_plans_with_predicted_step_times(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["geo", "plan", "--task", "lm", "--microbatches", "2", "--batch", "4"]) == 0
    out = capsys.readouterr().out
    assert "clusters (OP-Fence, by bandwidth): s1h1, s1h2; s2h1, s2h2; s3h1, s3h2" in out
    assert "naive: predicted step" in out and "opfence: predicted step" in out
    assert "over 10 Mbit/s, 40 ms" in out.split("opfence:")[0]  # naive a-b-c crosses the 10 Mbit/s link


@pytest.mark.parametrize("argv, message", [
    (["--wan", "a-b:x:3"], "argument --wan: WAN link 'a-b:x:3': expected A-B:MBITS:MS"),
    (["--wan", "a-q:10:3"], "innet geo plan: geo: WAN link a-q names unknown site 'q' (sites: a, b, c)"),
    (["--sites", "a:z"], "argument --sites: site 'a:z': expected NAME[:WORKERS]"),
])
def test_geo_plan_bad_input_is_one_line_and_exit_2(argv: list[str], message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["geo", "plan", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and "Traceback" not in "\n".join(err)


def test_geo_bench_refuses_an_unknown_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["geo", "bench", "--runs", "opfence/zip"]) == 2
    assert "innet geo bench: run opfence/zip: placement must be one of naive, greedy, search, opfence, uniform, dp and compression one of" in \
        capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    # 8 sites, one stage each, for an MLP with 7 operators besides its loss
    (["--sites", "a,b,c,d,e,f,g,h", "--wan", "a-b:10:1,b-c:10:1,c-d:10:1,d-e:10:1,e-f:10:1,f-g:10:1,g-h:10:1"],
     "plan: 8 stages (one per site) but graph mlp has only 7 operators"),
    (["--wan", "a-b:0:40"], "WAN link 'a-b:0:40': expected A-B:MBITS:MS, e.g. a-b:10:40: link bw_mbps=0.0: must be > 0"),
    (["--wan", "a-b:10:40"], "geo: the WAN links do not connect every site"),
])
def test_a_plan_that_cannot_fit_is_one_line_and_exit_2(argv: list[str], message: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    for action in ("plan", "bench"):
        assert main(["geo", action, *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        # the error is one line (argparse puts its usage lines before it)
        assert err[-1].startswith(f"innet geo {action}: ") or err[-1].startswith(f"innet geo {action}: error: ")
        assert message in err[-1] and "Traceback" not in "\n".join(err), err


def odd_model() -> object:
    """A factory for ``--torch``: a module whose forward calls an operator the OP-DAG lacks."""
    import torch

    class Odd(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(64, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cumsum(self.fc(x), dim=-1)

    return Odd()


@pytest.mark.parametrize("action", ["plan", "bench"])
def test_unknown_operator_in_a_traced_model_is_one_line_and_exit_2(action: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch", reason="torch (optional dependency) is not installed")
    argv = ["geo", action, "--torch", f"{__name__}:odd_model"]
    assert main(argv + (["--runs", "opfence/none", "--steps", "2"] if action == "bench" else [])) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown operator cumsum (function, node 'cumsum')" in err[0]


def test_runs_on_two_switch_implementations_are_one_document_with_rows_by_switch() -> None:
    from innet.testbed.geo.bench import combine, table
    from innet.testbed.geo.records import BenchResult, RunComparison, PipelineRow, Targets

    def doc(step_s: float) -> BenchResult:
        row = PipelineRow(placement="opfence", compression="adatopk", sites=("a", "c", "b"), cuts=(6, 16), links=(),
                          step_s=step_s, predicted_step_s=0.01, targets=Targets(None, None, 0.3), sends="-",
                          slow_link_bytes_per_step=0.0, final_accuracy=0.5, final_loss=1.0, final_test_loss=None,
                          train_wall_s=None, wan_bytes_per_step=1000.0, slow_link_ratio=0.1, mean_ratios=(),
                          wall_s=1.0, reduce_s=0.0, samples_per_step=128, wan_link_bytes=None, loss_curve=(),
                          accuracy_curve=(), test_loss_curve=(), comparison=RunComparison(1.0, None, None))
        return BenchResult(date="2026-01-01T00:00:00", machine=MACHINE, settings={"task": "digits"}, load_average=(),
                           site_speeds={}, probe_s={}, clusters=(), plans={}, rows=(row,), partial=False)

    both = combine({"innet": doc(0.005), "bmv2": doc(0.017)}, {})
    assert [(r.switch, r.step_s) for r in both.rows] == [("innet", 0.005), ("bmv2", 0.017)]
    assert [r["switch"] for r in both.to_json()["rows"]] == ["innet", "bmv2"]
    assert both.to_json()["switches"] == ["innet", "bmv2"]
    lines = table(both).splitlines()
    assert lines[0].startswith("switch placement") and lines[1].startswith("innet ") and lines[2].startswith("bmv2 ")
    only = combine({"innet": doc(0.005)}, {"bmv2": "simple_switch_grpc not found"})
    assert table(only).splitlines()[-1] == "no bmv2 rows: simple_switch_grpc not found"


def test_geo_bench_topk_runs_send_topk_and_bad_codecs_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    """Top-k runs send per-row top-k with int8 values (bfloat16 scales) and int4 gradients by
    default; int8 is its own run (``opfence/int8``), never a top-k run's payload; bad codecs are
    one line, exit 2."""
    from innet.testbed.geo.bench import GeoBenchConfig, GeoBenchError, link_compression

    config = GeoBenchConfig(task="lm")
    topk = link_compression(config, "topk")
    assert topk is not None and (topk.mode, topk.activations, topk.gradients, topk.values, topk.reference) == \
        ("topk", "topk", "int4", "int8-bf16", "key")
    int8 = link_compression(config, "int8")
    assert int8 is not None and int8.mode == "int8"
    assert link_compression(config, "none") is None
    with pytest.raises(GeoBenchError, match="activations='fp4'"):
        GeoBenchConfig(activations="fp4")
    with pytest.raises(GeoBenchError, match="gradients='masked'.*needs activations='topk' with row_topk"):
        GeoBenchConfig(row_topk=False, gradients="masked")
    assert main(["geo", "bench", "--activations", "fp4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "argument --activations: invalid choice: 'fp4'" in err[-1]
    assert main(["geo", "bench", "--tensor-topk", "--gradients", "masked", "--steps", "2"]) == 2
    assert "needs activations='topk' with row_topk" in capsys.readouterr().err


def test_sends_label_names_what_the_link_carried() -> None:
    from innet.testbed.geo.bench import sends_label

    assert sends_label({"top-k+int8": 30, "int8": 10}, {"masked+int8": 30, "int8": 10}, 0.25) == \
        "fwd top-k+int8 r=0.25 75%, int8 25% | bwd masked+int8 75%, int8 25%"
    assert sends_label({"dense": 4}, {}, None) == "fwd dense | bwd -"


def test_adatopk_stage_jobs_carry_the_codecs_on_the_slowest_link_only() -> None:
    from innet.host.geo.opfence import LinkCost, Plan
    from innet.testbed.geo.bench import GeoBenchConfig, stage_jobs

    plan = Plan(order=(("s1h1", "s1h2"), ("s2h1", "s2h2"), ("s3h1", "s3h2")), cuts=(8, 16),
                stage_nodes=(("a",), ("b",), ("c",)), stage_compute_s=(0.01, 0.01, 0.01),
                links=(LinkCost(10, 40), LinkCost(100, 10)), boundary_bytes=(1, 1), reduce_s=(0, 0, 0),
                microbatches=4, step_s=1.0)
    jobs = stage_jobs(GeoBenchConfig(task="lm"), plan, "adatopk", 0)
    assert jobs[0].compress_next is not None and jobs[1].compress_prev == jobs[0].compress_next
    assert (jobs[0].compress_next.activations, jobs[0].compress_next.gradients) == ("topk", "int4")
    assert jobs[1].compress_next is None and jobs[2].compress_prev is None  # 100 Mbit/s: not the slowest
    other = stage_jobs(GeoBenchConfig(task="lm", gradients="int8"), plan, "adatopk", 0)
    assert other[0].compress_next is not None
    assert (other[0].compress_next.activations, other[0].compress_next.gradients) == ("topk", "int8")


def test_link_check_compares_probed_links_with_their_configuration() -> None:
    from innet.host.geo.opfence import LinkCost, Plan
    from innet.testbed.geo.bench import link_check, link_check_line

    plan = Plan(order=(("s1h1",), ("s3h1",), ("s2h1",)), cuts=(6, 16), stage_nodes=(("a",), ("b",), ("c",)),
                stage_compute_s=(0.01, 0.01, 0.01), links=(LinkCost(1000, 2), LinkCost(10, 30)),
                boundary_bytes=(1, 1), reduce_s=(0, 0, 0), microbatches=4, step_s=1.0)
    from innet.testbed.geo.records import StageDone

    idle = StageDone(0, 0.0, 0, 0, 0, 0, {}, {}, (), (), ())
    done = [replace(idle, bandwidth_next_bps=119e6, delay_next_s=0.0021),
            replace(idle, stage=1, bandwidth_next_bps=9.7e6, delay_next_s=0.0304), replace(idle, stage=2)]
    checks = link_check(plan, ["a", "c", "b"], done)
    assert [(c.link, c.within_tolerance) for c in checks] == [("a-c", False), ("c-b", True)]
    assert link_check_line(checks) == ("a-c 1000 Mbit/s 2 ms -> 119.0 Mbit/s 2.1 ms (more than 10% off); "
                                       "c-b 10 Mbit/s 30 ms -> 9.7 Mbit/s 30.4 ms")


def test_adatopk_is_floored_and_capped_at_the_topk_ratio_unless_told_otherwise() -> None:
    import argparse

    from innet.testbed.cli.geo import add_commands
    from innet.testbed.geo.bench import GeoBenchConfig, GeoBenchError, link_compression

    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers())
    args = parser.parse_args(["geo", "bench"])
    assert (args.topk_ratio, args.adatopk_max_ratio) == (0.28125, None)
    assert parser.parse_args(["geo", "bench", "--adatopk-max-ratio", "0.5"]).adatopk_max_ratio == 0.5

    default = link_compression(GeoBenchConfig(task="lm"), "adatopk")
    # the cap is 1: a link with time to spare goes dense (every column's gradient is sent as int4)
    assert default is not None and (default.ratio, default.max_ratio) == (0.28125, 1.0)
    # the floor is the fixed ratio too (below it the language model left dense), unless given
    assert args.min_ratio is None and default.min_ratio == 0.28125
    assert parser.parse_args(["geo", "bench", "--min-ratio", "0.25"]).min_ratio == 0.25
    opened = link_compression(GeoBenchConfig(task="lm", min_ratio=0.25, adatopk_max_ratio=1.0), "adatopk")
    assert opened is not None and (opened.min_ratio, opened.max_ratio) == (0.25, 1.0)
    moved = link_compression(GeoBenchConfig(task="lm", topk_ratio=0.375), "adatopk")
    assert moved is not None and (moved.min_ratio, moved.max_ratio) == (0.375, 1.0)
    loose = link_compression(GeoBenchConfig(task="lm", adatopk_max_ratio=1.0), "adatopk")
    assert loose is not None and loose.max_ratio == 1.0
    fixed = link_compression(GeoBenchConfig(task="lm"), "topk")
    assert fixed is not None and fixed.ratio == 0.28125
    with pytest.raises(GeoBenchError, match="max_ratio=0.1"):
        GeoBenchConfig(task="lm", adatopk_max_ratio=0.1)
    GeoBenchConfig(task="lm", adatopk_max_ratio=0.1, runs=(("opfence", "topk"),))  # no AdaTopK run: no cap


def test_data_parallel_batch_defaults_to_the_pipelines_and_can_match_their_global_batch() -> None:
    import argparse

    from innet.testbed.cli.geo import add_commands
    from innet.testbed.geo.bench import GeoBenchConfig, GeoBenchError
    from innet.testbed.geo.dp import dp_batch

    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers())
    assert parser.parse_args(["geo", "bench"]).dp_batch is None
    assert parser.parse_args(["geo", "bench", "--dp-batch", "3"]).dp_batch == 3
    assert dp_batch(GeoBenchConfig(batch=8)) == 8
    assert dp_batch(GeoBenchConfig(batch=8, dp_batch=3)) == 3
    with pytest.raises(GeoBenchError, match="dp batch"):
        GeoBenchConfig(dp_batch=0)


def test_the_seed_moves_initialisation_and_data_order_not_the_task(capsys: pytest.CaptureFixture[str]) -> None:
    from innet.host.geo.opfence import LinkCost, Plan
    import argparse

    from innet.testbed.cli.geo import add_commands
    from innet.testbed.geo.bench import GeoBenchConfig, stage_jobs

    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers())
    assert parser.parse_args(["geo", "bench"]).seed == 0
    assert parser.parse_args(["geo", "bench", "--seed", "2"]).seed == 2
    assert main(["geo", "bench", "--seed", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "argument --seed: -1 is outside 0..2147483647" in err[-1] and "Traceback" not in "\n".join(err)

    plan = Plan(order=(("s1h1",), ("s2h1",), ("s3h1",)), cuts=(8, 16), stage_nodes=(("a",), ("b",), ("c",)),
                stage_compute_s=(0.01, 0.01, 0.01), links=(LinkCost(10, 40), LinkCost(100, 10)),
                boundary_bytes=(1, 1), reduce_s=(0, 0, 0), microbatches=4, step_s=1.0)
    jobs = stage_jobs(GeoBenchConfig(task="lm", seed=2), plan, "topk", 1)
    # parameters from seed 2, replica 1's batches from 1002, the task (language, test set) from 0
    assert {(j.seed, j.data_seed, j.task_seed) for j in jobs} == {(2, 1002, 0)}
