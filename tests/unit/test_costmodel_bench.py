"""innet.testbed.bench: rows from worker results next to the cost model, tables, caption."""

from __future__ import annotations

import pytest

from innet.testbed import bench, costmodel
from innet.testbed.bringup import WorkerResult, parse_results


def _result(rank: int, size: int, times: tuple[float, ...], tx: float) -> WorkerResult:
    wire = {"tx_bytes": tx, "rx_bytes": tx, "tx_packets": tx / 318, "rx_packets": tx / 318}
    return WorkerResult(rank, size, times, True, {"retransmitted": rank}, wire, f"h{rank + 1}-eth0")


def test_summarize_takes_the_slowest_worker_per_operation_and_the_theory() -> None:
    per_rank = [[_result(0, 1024, (0.010, 0.020), 5088)], [_result(1, 1024, (0.012, 0.016), 5088)]]
    link = costmodel.LinkModel(bw_bps=1e9)
    (row,) = bench.summarize("ina", 2, 0.0, per_rank, 64, link)
    assert row.time_max_s == pytest.approx((0.012 + 0.020) / 2)
    assert row.time_mean_s == pytest.approx((0.010 + 0.020 + 0.012 + 0.016) / 4)
    assert row.goodput_gbps == pytest.approx(1024 * 4 * 8 / row.time_max_s / 1e9)
    assert row.switch_pps == pytest.approx(2 * 16 / row.time_max_s)
    assert row.wire_up == 5088 and row.theory_wire == 16 * 318 and row.theory_payload == 4096
    assert row.retransmitted == 1 and row.ok
    (ring,) = bench.summarize("gloo", 2, 0.0, per_rank, 64, link)
    assert ring.theory_payload == 4096 and ring.retransmitted is None


def test_parse_results_reads_worker_json_lines() -> None:
    text = 'noise\n{"rank": 1, "elements": 8, "times": [0.5], "ok": true, "wire": null, "wire_source": null}\n'
    (r,) = parse_results(text)
    assert (r.rank, r.elements, r.times, r.ok, r.wire, r.stats) == (1, 8, (0.5,), True, None, {})


def test_tables_and_caption_name_the_settings() -> None:
    per_rank = [[_result(0, 1024, (0.01,), 5088)], [_result(1, 1024, (0.01,), 5088)]]
    rows = bench.summarize("ina", 2, 1.0, per_rank, 64, costmodel.LinkModel(bw_bps=1e9, loss=0.01))
    doc = {"machine": {"cpu": "TestCPU", "cores": 2}, "backend": "mininet", "switch": bench.BACKEND,
           "settings": {"bw_mbps": 1000.0, "delay_ms": None, "k": 64, "window": 16, "workers": [2], "sizes": [1024], "losses": [1.0]},
           "rows": [r.__dict__ for r in rows]}
    caption = bench.caption(doc)
    for part in ("TestCPU (2 cores)", "mininet", "K=64", "workers 2", "S=1K", "1000 Mbit/s links", "loss 1%"):
        assert part in caption
    assert bench.markdown_table(doc).splitlines()[2].startswith("| ina | 2 | 1K | 1% | 10.0 |")


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
