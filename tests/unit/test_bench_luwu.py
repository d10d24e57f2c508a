"""bench_luwu's rows (bytes, memory, overlap split), its summary and its argument errors,
from synthetic run results (the benchmark itself is a program, not a test)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from innet.testbed.luwu.bench import main, row_of, summary
from innet.testbed.core.bounds import INNET_FRAME_OVERHEAD
from innet.testbed.luwu.run import RunResult

STEPS, K, P = 10, 64, 1000


def _final(step_s: float, wait_s: float = 0.0) -> dict:
    return {"params": P, "step_seconds": [9.0, 9.0] + [step_s] * (STEPS - 2), "rss_bytes": 2**20 * 300,
            "tensor_bytes_peak": 4 * P, "tensor_bytes_between_steps": 0, "accuracy": 0.9,
            "agent_stats": {"sent": 100, "results": 100, "statuses": 0},
            "comm": {"push_seconds": 0.5, "pull_seconds": 0.5, "wait_seconds": 99.0},
            "step_wait_seconds": [9.0, 9.0] + [wait_s] * (STEPS - 2)}


def test_rows_skip_warm_up_count_frames_and_split_the_overlapped_step() -> None:
    luwu = RunResult("luwu", finals=[_final(0.2, wait_s=0.05), _final(0.2, wait_s=0.05)],
                     nodes=[{"rss_bytes": 5, "bytes_on_disk": 6, "bytes_state": 7}])
    row = row_of(luwu, 2, True, STEPS, K)
    assert row["step_ms"] == pytest.approx(200.0)  # the first two steps are warm-up
    assert row["bytes_per_worker_step"] == pytest.approx(200 * (INNET_FRAME_OVERHEAD + 4 * K) / STEPS)
    assert row["comm_busy_ms_per_step"] == pytest.approx(100.0)
    assert row["comm_wait_ms_per_step"] == pytest.approx(50.0)
    assert row["compute_ms_per_step"] == pytest.approx(150.0)
    assert row["node"]["bytes_on_disk"] == 6 and row["worker_tensor_bytes_between_steps"] == 0
    serialized = row_of(RunResult("luwu", finals=[_final(0.3)] * 2, nodes=[{}]), 2, False, STEPS, K)
    assert serialized["mode"] == "luwu (serialized)" and "compute_ms_per_step" not in serialized
    gloo = row_of(RunResult("ddp-gloo", finals=[_final(0.01)] * 4), 4, True, STEPS, K)
    assert gloo["bytes_per_worker_step"] == pytest.approx(2 * 2 * 3 / 4 * 4 * P)  # ring theory, both ways
    assert summary([row, serialized, gloo]) == {2: {"overlap_speedup": pytest.approx(1.5)}}


def test_a_run_with_missing_workers_is_a_row_without_numbers() -> None:
    row = row_of(RunResult("luwu", finals=[_final(0.2)], errors={"train-h2": "OptimizerNodeError"}), 2, True,
                 STEPS, K)
    assert row["failed"] == "1 of 2 workers finished" and "step_ms" not in row
    assert summary([row]) == {}


@pytest.mark.parametrize(("argv", "message"), [
    (["--bw", "10"], r"--bw 10: link shaping needs --mininet"),
    (["--mininet", "--bw", "0"], r"--bw 0: must be > 0"),
    (["--workers", "2", "32"], r"--workers 2 32: each must be within 2\.\.31"),
    (["--steps", "2"], r"--steps 2: must be >= 3"),
    (["--batch", "0"], r"--batch 0: must be >= 1"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv: list[str], message: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err)


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib (the plot extra) is not installed")
    from innet.testbed.luwu.bench import plot

    rows = [row_of(RunResult(m, finals=[_final(0.2, 0.05)] * 2, nodes=[{}]), 2, o, STEPS, K)
            for m, o in (("ddp-gloo", True), ("luwu", True), ("luwu", False))]
    doc = {"rows": rows, "machine": {"cpu": "x", "cores": 2}, "backend": "loopback", "switch": "s",
           "load_average_start": "1", "load_average_end": "2",
           "settings": {"model": "MLP", "batch": 32, "k": K, "nodes": 1}}
    path = plot(doc, tmp_path / "b.png")
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
