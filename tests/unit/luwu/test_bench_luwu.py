"""bench_luwu's rows (bytes, memory, overlap split), its summary and its argument errors,
from synthetic run results (the benchmark itself is a program, not a test)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from innet.cli import main as innet
from innet.testbed.luwu.bench import measure_row, summary
from innet.testbed.core.bounds import INNET_FRAME_OVERHEAD
from innet.testbed.luwu.records import TrainerFinal
from innet.testbed.luwu.run import RunResult
from innet.testbed.luwu.status import NodeStatus, UnreadNodeStatus
from testkit.node_status import written_status

STEPS, K, P = 10, 64, 1000
UNREAD = UnreadNodeStatus("optimizer node status o1/status.json: no such file")


def row_of(result: RunResult, workers: int, overlap: bool, steps: int, k: int, warmup: int = 2) -> dict:
    """The row as the saved document has it."""
    return measure_row(result, workers, overlap, steps, k, warmup).to_json()


def _report(step_s: float, wait_s: float = 0.0) -> dict:
    """A trainer's final line as it prints it (no ``rss_peak_bytes``, as older trainers)."""
    return {"final": True, "mode": "luwu", "rank": 0, "params": P, "step_seconds": [9.0, 9.0] + [step_s] * (STEPS - 2),
            "rss_bytes": 2**20 * 300, "tensor_bytes_peak": 4 * P, "tensor_bytes_between_steps": 0, "accuracy": 0.9,
            "agent_stats": {"sent": 100, "results": 100, "statuses": 0},
            "comm": {"push_seconds": 0.5, "pull_seconds": 0.5, "wait_seconds": 99.0, "saturated": 0},
            "step_wait_seconds": [9.0, 9.0] + [wait_s] * (STEPS - 2)}


def _final(step_s: float, wait_s: float = 0.0) -> TrainerFinal:
    return TrainerFinal.from_json(_report(step_s, wait_s))


def test_rows_skip_warm_up_count_frames_and_split_the_overlapped_step() -> None:
    luwu = RunResult("luwu", finals=[_final(0.2, wait_s=0.05), _final(0.2, wait_s=0.05)],
                     nodes=[NodeStatus.from_json(written_status())])
    row = row_of(luwu, 2, True, STEPS, K)
    assert row["step_ms"] == pytest.approx(200.0)  # the first two steps are warm-up
    assert row["bytes_per_worker_step"] == pytest.approx(200 * (INNET_FRAME_OVERHEAD + 4 * K) / STEPS)
    assert row["comm_busy_ms_per_step"] == pytest.approx(100.0)
    assert row["comm_wait_ms_per_step"] == pytest.approx(50.0)
    assert row["compute_ms_per_step"] == pytest.approx(150.0)
    assert row["node"]["bytes_on_disk"] == 6 << 20 and row["worker_tensor_bytes_between_steps"] == 0
    assert row["node"]["seconds"] == {"adam": 0.5, "comm": 1.25}
    serialized = row_of(RunResult("luwu", finals=[_final(0.3)] * 2, nodes=[UNREAD]), 2, False, STEPS, K)
    assert serialized["mode"] == "luwu (serialized)" and "compute_ms_per_step" not in serialized
    gloo = row_of(RunResult("ddp-gloo", finals=[_final(0.01)] * 4), 4, True, STEPS, K)
    assert gloo["bytes_per_worker_step"] == pytest.approx(2 * 2 * 3 / 4 * 4 * P)  # ring theory, both ways
    typed = [measure_row(RunResult("luwu", finals=[_final(0.2, wait_s=0.05)] * 2, nodes=[UNREAD]), 2, True, STEPS, K),
             measure_row(RunResult("luwu", finals=[_final(0.3)] * 2, nodes=[UNREAD]), 2, False, STEPS, K),
             measure_row(RunResult("ddp-gloo", finals=[_final(0.01)] * 4), 4, True, STEPS, K)]
    assert summary(typed) == {2: {"overlap_speedup": pytest.approx(1.5)}}


def test_a_run_with_missing_workers_is_a_row_without_numbers() -> None:
    row = row_of(RunResult("luwu", finals=[_final(0.2)], errors={"train-h2": "OptimizerNodeError"}), 2, True,
                 STEPS, K)
    assert row["failed"] == "1 of 2 workers finished" and "step_ms" not in row
    failed = measure_row(RunResult("luwu", finals=[_final(0.2)]), 2, True, STEPS, K)
    assert failed.measures is None and summary([failed]) == {}


@pytest.mark.parametrize(("argv", "message"), [
    (["--bw", "10"], r"--bw 10: link shaping needs --backend mininet"),
    (["--backend", "mininet", "--bw", "0"], r"--bw 0: must be > 0"),
    (["--workers", "2,32"], r"--workers 2,32: each must be within 2\.\.31"),
    (["--steps", "2"], r"--steps 2: must be >= 3"),
    (["--batch", "0"], r"--batch 0: must be >= 1"),
    (["--in-flight", "-1"], r"--in-flight -1: must be >= 0 KiB"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv: list[str], message: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert innet(["bench", "luwu", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err)


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib (the plot extra) is not installed")
    from innet.testbed.luwu.bench import plot

    rows = [row_of(RunResult(m, finals=[_final(0.2, 0.05)] * 2, nodes=[UNREAD]), 2, o, STEPS, K)
            for m, o in (("ddp-gloo", True), ("luwu", True), ("luwu", False))]
    doc = {"rows": rows, "machine": {"cpu": "x", "cores": 2}, "backend": "loopback", "switch": "s",
           "load_average_start": "1", "load_average_end": "2",
           "settings": {"model": "MLP", "batch": 32, "k": K, "nodes": 1}}
    path = plot(doc, tmp_path / "b.png")
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _timed(steps: list[float], link: dict | None = None, **more: object) -> TrainerFinal:
    report = {**_report(0.0), "step_seconds": steps, **more}
    if link is not None:
        report["link"] = link
    return TrainerFinal.from_json(report)


def test_step_time_is_the_slowest_worker_per_step_then_median_and_p90() -> None:
    fast = [9.0, 9.0] + [0.1] * 10
    slow = [9.0, 9.0] + [0.1] * 9 + [1.1]  # one slow step on one worker
    row = row_of(RunResult("ddp-innet", finals=[_timed(fast), _timed(slow)]), 2, True, 12, K, warmup=2)
    assert row["timed_steps"] == 10
    assert row["step_ms"] == pytest.approx(100.0)
    assert row["step_ms_p90"] == pytest.approx(100.0 + 0.1 * 1000.0)  # numpy's linear interpolation: 90% of 10
    assert row["worker_rss_peak_mb"] == pytest.approx(300.0)  # no rss_peak_bytes: falls back to rss_bytes


def test_link_bytes_are_per_timed_step_and_per_direction() -> None:
    link = {"steps": 10, "sent_bytes": 5_000, "received_bytes": 7_000, "sent_packets": 5, "received_packets": 7}
    row = row_of(RunResult("fsdp", finals=[_timed([0.1] * 12, link)] * 4), 4, True, 12, K)
    assert row["link_up_bytes_per_step"] == pytest.approx(500.0)
    assert row["link_down_bytes_per_step"] == pytest.approx(700.0)
    assert row["bytes_per_worker_step"] == pytest.approx(2 * 4 * 3 / 4 * 4 * P)  # all-gather x2 + reduce-scatter
    assert row["bytes_source"] == "theory"
    no_link = row_of(RunResult("fsdp", finals=[_timed([0.1] * 12, link), _timed([0.1] * 12)]), 2, True, 12, K)
    assert "link_up_bytes_per_step" not in no_link  # one worker without counters: no link figure at all


def test_summary_gives_every_mode_against_ddp_gloo_and_the_bare_allreduces_against_each_other() -> None:
    rows = [measure_row(RunResult(m, finals=[_timed([0.0, 0.0] + [t] * 10)] * 2), 2, True, 12, K)
            for m, t in (("ddp-gloo", 0.6), ("ddp-innet", 0.4), ("fsdp", 1.2), ("allreduce-gloo", 0.5),
                         ("allreduce-innet", 0.25))]
    assert summary(rows) == {2: {"ddp-innet vs ddp-gloo": pytest.approx(1.5), "fsdp vs ddp-gloo": pytest.approx(0.5),
                                 "allreduce-innet vs allreduce-gloo": pytest.approx(2.0)}}


@pytest.mark.parametrize(("argv", "message"), [
    (["--mtu", "9000"], r"--mtu 9000: the MTU is a Mininet link's"),
    (["--backend", "mininet", "--mtu", "100"], r"--mtu 100: must be within 576\.\.9000"),
    (["-k", "100"], r"-k 100: innet\.p4 builds K in"),
    (["--backend", "mininet", "-k", "2048"], r"-k 2048: a \d+-byte innet packet exceeds the MTU 1500 \(largest K that fits: 256\)"),
    (["--warmup", "0"], r"--warmup 0: must be >= 1"),
    (["--window", "0"], r"--window 0: must be >= 1"),
])
def test_bad_link_and_packet_arguments_are_one_line_and_exit_2(argv: list[str], message: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert innet(["bench", "luwu", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err)


def test_cpu_per_step_is_summed_over_the_workers() -> None:
    finals = [_timed([0.1] * 12, cpu_per_step={"trainer": 0.5, "agent": 0.25})] * 4
    row = row_of(RunResult("ddp-innet", finals=finals), 4, True, 12, K)
    assert row["cpu_s_per_step"] == {"trainers": pytest.approx(2.0), "agents": pytest.approx(1.0)}
