"""Per-row top-k on a pipeline boundary trains the language model like dense, at under half the
bytes of int8: top-k + int8 values (bfloat16 scales) of the deviation from a per-token
reference, every column's gradient as int4 with error feedback, int8 warm-up (docs/geo.md,
"Top-k that converges")."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from innet.host.geo.compress import CompressionConfig
from innet.host.geo.rad import run_threads
from innet.host.geo.stage_process import build_model, build_task
from innet.host.geo.specs import GptSpec, LmSpec
from innet.host.geo.stages import Sgd

STEPS = 200
TOPK = CompressionConfig("topk", ratio=0.28125, row_topk=True, activations="topk", gradients="int4",
                         values="int8-bf16", reference="key", reference_rate=0.9, warmup_steps=10, warmup="int8")


def _train(config: CompressionConfig | None) -> tuple[float, float]:
    """Mean training loss of the last 10 steps and bytes per step over the compressed boundary."""
    graph = build_model(GptSpec(vocab=32, d=32, heads=2, layers=2, seq=16))
    task = build_task(LmSpec(vocab=32, seq=16), 0)
    batches = task.batches(16, 2, 1000)
    steps = [next(batches) for _ in range(STEPS)]
    with threadpool_limits(1):  # three stage threads on a shared machine
        result = run_threads(graph, (6, 16), graph.init_params(0), steps, Sgd(0.3, 0.9),
                             compression=[None, config], timeout=60.0)
    return float(np.mean(result.losses[-10:])), result.bytes_per_link[1] / STEPS


@pytest.mark.timeout(300)
def test_topk_with_reference_and_int4_gradients_tracks_dense_at_half_int8_bytes() -> None:
    dense_loss, dense_bytes = _train(None)
    topk_loss, topk_bytes = _train(TOPK)
    int8_loss, int8_bytes = _train(CompressionConfig("int8"))
    assert dense_loss < 2.0  # it learnt something: the start is ln 32 = 3.47
    assert abs(topk_loss - dense_loss) < 0.05, (topk_loss, dense_loss, int8_loss)
    assert topk_bytes * 2 < int8_bytes < dense_bytes, (topk_bytes, int8_bytes)
