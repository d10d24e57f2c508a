"""innet.testbed.ina.bench: rows from worker results next to the cost model, tables, caption."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from innet.host.agent.agent import OpResult
from innet.host.agent.transport import udp_transport
from innet.testbed.ina import bench
from innet.testbed.core import bounds as costmodel
from innet.testbed.core import ina_worker
from innet.testbed.core.testbed import WorkerResult, parse_results


def _result(rank: int, size: int, times: tuple[float, ...], tx: float, timed_retransmitted: int = 0) -> WorkerResult:
    wire = {"tx_bytes": tx, "rx_bytes": tx, "tx_packets": tx / 318, "rx_packets": tx / 318}
    stats = {"retransmitted": 1000 + rank, "timed_retransmitted": timed_retransmitted}  # cumulative, timed only
    return WorkerResult(rank, size, times, True, stats, wire, f"h{rank + 1}-eth0")


def test_summarize_takes_the_slowest_worker_per_operation_and_the_theory() -> None:
    per_rank = [[_result(0, 1024, (0.010, 0.020), 5088, 3)], [_result(1, 1024, (0.012, 0.016), 5088, 4)]]
    link = costmodel.LinkModel(bw_bps=1e9)
    (row,) = bench.summarize("ina", 2, 0.0, per_rank, 64, link)
    assert row.time_max_s == pytest.approx((0.012 + 0.020) / 2)
    assert row.time_mean_s == pytest.approx((0.010 + 0.020 + 0.012 + 0.016) / 4)
    assert row.goodput_gbps == pytest.approx(1024 * 4 * 8 / row.time_max_s / 1e9)
    assert row.switch_pps == pytest.approx(2 * 16 / row.time_max_s)
    assert row.wire_up == 5088 and row.theory_wire == 16 * 322 and row.theory_payload == 4096
    assert row.retransmitted == pytest.approx((3 + 4) / 2) and row.ok  # all workers, per timed operation
    (ring,) = bench.summarize("gloo", 2, 0.0, per_rank, 64, link)
    assert ring.theory_payload == 4096 and ring.retransmitted is None
    old = [[WorkerResult(r, 1024, (0.01,), True, {"retransmitted": 5}, None, None)] for r in range(2)]
    assert bench.summarize("ina", 2, 0.0, old, 64, link)[0].retransmitted is None  # not reported: no number


class _ScriptedAgent:
    """Stands in for ``Agent`` in ``ina_worker.run``: every ``allreduce_int`` (warm-up and
    barriers) retransmits 100 chunks, the k-th float ``allreduce_into`` k x (rank + 1) chunks and
    writes the right sum."""

    def __init__(self, config: Any, capacity: int) -> None:
        self.n, self.rank = config.job.num_workers, config.job.rank
        self.retransmitted = 0
        self.calls = 0
        self.last: OpResult | None = None

    def __enter__(self) -> "_ScriptedAgent":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def _done(self, resent: int) -> None:
        self.retransmitted += resent
        self.last = OpResult(0, 0, 0.0, {"retransmitted": self.retransmitted})

    def allreduce_int(self, x: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
        self._done(100)
        return x

    def allreduce_into(self, x: npt.NDArray[np.float32], out: npt.NDArray[np.float32], divisor: int = 1,
                       timeout: float | None = None) -> None:
        self.calls += 1
        self._done(self.calls * (self.rank + 1))
        out[...] = self.n * (self.n + 1) / 2 / divisor


def test_ina_worker_reports_retransmissions_of_the_timed_operations_only(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(ina_worker, "Agent", _ScriptedAgent)
    per_rank = []
    for rank in range(2):
        plan = ina_worker.WorkerPlan(job=1, rank=rank, num_workers=2, window=4, k=64,
                                     transport=udp_transport("127.0.0.1", "127.0.0.1", 0),
                                     sizes=(64, 128), epoch=1, repeats=2)
        assert ina_worker.run(plan) == 0
        first, second = (json.loads(line) for line in capsys.readouterr().out.splitlines())
        # size 64: float allreduces 1 (warm-up), 2, 3; size 128: 4 (warm-up), 5, 6
        assert first["stats"]["timed_retransmitted"] == (2 + 3) * (rank + 1)
        assert second["stats"]["timed_retransmitted"] == (5 + 6) * (rank + 1)
        # the cumulative counter still includes the warm-ups and the barriers (100 each)
        assert first["stats"]["retransmitted"] == 100 * (1 + 2 * 3) + (1 + 2 + 3) * (rank + 1)
        per_rank.append(parse_results("\n".join(json.dumps(d) for d in (first, second))))
    rows = bench.summarize("ina", 2, 0.0, per_rank, 64, costmodel.LinkModel(bw_bps=1e9))
    assert [r.retransmitted for r in rows] == [(5 + 10) / 2, (11 + 22) / 2]  # both workers, per operation


def test_parse_results_reads_worker_json_lines() -> None:
    text = 'noise\n{"rank": 1, "elements": 8, "times": [0.5], "ok": true, "wire": null, "wire_source": null}\n'
    (r,) = parse_results(text)
    assert (r.rank, r.elements, r.times, r.ok, r.wire, r.stats) == (1, 8, (0.5,), True, None, {})


def test_tables_and_caption_name_the_settings() -> None:
    per_rank = [[_result(0, 1024, (0.01,), 5088)], [_result(1, 1024, (0.01,), 5088)]]
    rows = bench.summarize("ina", 2, 1.0, per_rank, 64, costmodel.LinkModel(bw_bps=1e9, loss=0.01))
    doc = {"machine": {"cpu": "TestCPU", "cores": 2}, "backend": "mininet", "switch": bench.switch_description("python"),
           "settings": {"bw_mbps": 1000.0, "delay_ms": None, "k": 64, "window": 16, "workers": [2], "sizes": [1024], "losses": [1.0]},
           "rows": [r.__dict__ for r in rows]}
    caption = bench.caption(doc)
    for part in ("TestCPU (2 cores)", "mininet", "python executor", "K=64", "workers 2", "S=1K", "1000 Mbit/s links", "loss 1%"):
        assert part in caption
    lines = bench.markdown_table(doc).splitlines()
    assert lines[0].split("|")[-3].strip() == "retrans/op"
    assert lines[2].startswith("| ina | innet | 2 | 1K | 1% | 10.0 |") and lines[2].endswith("| 0 | yes |")
    assert "no bmv2 rows" not in bench.markdown_table(doc)
    doc["switch_absent"] = {"bmv2": "bmv2 backend: simple_switch_grpc not found on PATH"}
    assert bench.markdown_table(doc).endswith("\n\nno bmv2 rows: bmv2 backend: simple_switch_grpc not found on PATH")
    doc["rows"][0]["retransmitted"] = 2.5
    assert bench.markdown_table(doc).splitlines()[2].endswith("| 2.5 | yes |")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"workers": (1,)}, r"workers=1: must be within 2\.\.8"),
    ({"sizes": (1 << 25,)}, r"size=33554432"),
    ({"losses": (100.0,)}, r"loss=100.0"),
    ({"collectives": ("nccl",)}, r"choose from ina, gloo"),
    ({"backend": "docker"}, r"backend='docker'"),
])
def test_bench_config_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bench.BenchConfig(**kwargs)  # type: ignore[arg-type]


def test_save_of_a_run_stopped_before_its_first_row_writes_json_and_a_plot(tmp_path: Any) -> None:
    """Ctrl-C before any row: the partial document is saved and the plot says nothing was measured."""
    doc = {"date": "2026-11-28T17:00:00", "rows": [], "partial": True}
    json_path, png_path = bench.save(doc, tmp_path)
    assert json.loads(json_path.read_text())["rows"] == [] and png_path.stat().st_size > 0
