"""AdaTopK's held ratio (the kept count changes only when the link does) and the bytes the cost
model predicts for each codec against the bytes encoded."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from innet.host.geo.codec import encode
from innet.host.geo.compress import CompressionConfig, CompressionError, LinkCompressor, RatioHold


def test_hold_ignores_jitter_within_the_band_and_follows_a_drop_at_once() -> None:
    hold = RatioHold(band=0.25, patience=3)
    assert hold.update(0.40) == 0.40
    # the bandwidth estimate wobbles +-20%: the ratio (the kept count) stays
    assert [hold.update(r) for r in (0.47, 0.33, 0.45, 0.34)] == [0.40] * 4
    # the link slows by more than the band: followed on the first message
    assert hold.update(0.20) == 0.20
    dense = RatioHold(band=0.25, patience=3)
    assert dense.update(1.0) == 1.0 and dense.update(0.9) == 0.9  # dense over a link that needs less: never


def test_hold_raises_only_after_patience_messages_above_the_band_to_the_least_of_them() -> None:
    hold = RatioHold(band=0.25, patience=3)
    hold.update(0.25)
    assert [hold.update(r) for r in (0.60, 0.50)] == [0.25, 0.25]
    assert hold.update(0.26) == 0.25  # back within the band: the count starts again
    assert [hold.update(r) for r in (0.60, 0.50, 0.55)] == [0.25, 0.25, 0.50]


def test_a_bench_like_ratio_curve_changes_the_kept_count_rarely() -> None:
    """A per-step ratio curve like one measured on the slow-link WAN (0.25-0.68 from step to
    step at a constant rate): without the hold every step changes the count, with it few do."""
    curve = [0.37, 0.44, 0.29, 0.42, 0.62, 0.68, 0.64, 0.63, 0.62, 0.58, 0.34, 0.25, 0.25, 0.31, 0.27, 0.33]
    per_message = [r for r in curve for _ in range(4)]  # 4 microbatches per step, one estimate per step

    def changes(config: CompressionConfig) -> int:
        hold = LinkCompressor(config, bandwidth_bps=1e6).hold
        counts = [int(np.ceil(hold.update(r) * 32 - 1e-9)) for r in per_message]
        return sum(a != b for a, b in zip(counts, counts[1:]))

    free = changes(CompressionConfig("adatopk", ratio_band=0.0, ratio_patience=1))
    held = changes(CompressionConfig("adatopk"))
    assert free == 13 and held == 3


def test_adatopk_compressor_holds_its_ratio_through_bandwidth_jitter() -> None:
    config = CompressionConfig("adatopk", min_ratio=0.01, row_topk=True, activations="topk", values="int8")
    tx = LinkCompressor(config, bandwidth_bps=4e6, direction="fwd")
    x = np.random.default_rng(0).standard_normal((8, 16, 32)).astype(np.float32)
    tx.compress({"h": x}, budget_s=0.005)
    first = tx.last_ratio
    for bw in (4.4e6, 3.7e6, 4.3e6, 3.6e6, 4.4e6):  # +-10%
        tx.bandwidth_bps = bw
        tx.compress({"h": x}, budget_s=0.005)
        assert tx.last_ratio == first
    tx.bandwidth_bps = 1e6  # a real drop
    tx.compress({"h": x}, budget_s=0.005)
    assert tx.last_ratio < first * 0.5


def test_bad_hold_settings_are_named() -> None:
    with pytest.raises(CompressionError, match="ratio_band=1.5"):
        CompressionConfig("adatopk", ratio_band=1.5)
    with pytest.raises(CompressionError, match="ratio_patience=0"):
        CompressionConfig("adatopk", ratio_patience=0)


def _payload(data: bytes) -> int:
    (hlen,) = struct.unpack_from(">I", data)
    return len(data) - 4 - hlen


CODECS = {
    "dense": (CompressionConfig(), "fwd"),
    "int8": (CompressionConfig("int8"), "fwd"),
    "int8 gradients": (CompressionConfig("int8"), "bwd"),
    "tensor top-k": (CompressionConfig("topk", ratio=0.1), "fwd"),
    "row top-k fp32": (CompressionConfig("topk", ratio=0.25, row_topk=True), "fwd"),
    "row top-k int8": (CompressionConfig("topk", ratio=0.3, row_topk=True, values="int8"), "fwd"),
    "masked fp32": (CompressionConfig("topk", ratio=0.25, row_topk=True, gradients="masked"), "bwd"),
    "masked int8": (CompressionConfig("topk", ratio=0.25, row_topk=True, gradients="masked", values="int8"), "bwd"),
    "int8-fit": (CompressionConfig("topk", ratio=0.5, activations="int8-fit", gradients="int8"), "fwd"),
    "top-k gradients": (CompressionConfig("topk", ratio=0.25, gradients="topk"), "bwd"),
}


@pytest.mark.parametrize("name", sorted(CODECS))
@pytest.mark.parametrize("step", [0, 20])
def test_predicted_bytes_are_the_encoded_bytes(name: str, step: int) -> None:
    """For every codec, in warm-up (int8) and after it, the cost model's bytes equal the payload
    of the message actually encoded, byte for byte."""
    config, direction = CODECS[name]
    if config.mode != "none":
        config = CompressionConfig(**{**config.__dict__, "warmup_steps": 10, "warmup": "int8"})
    rng = np.random.default_rng(1)
    msg = {"h": rng.standard_normal((4, 16, 32)).astype(np.float32),
           "r": rng.standard_normal((4, 16, 48)).astype(np.float32)}
    fwd = LinkCompressor(config, direction="fwd")
    kept: dict[str, np.ndarray] = {}
    fwd.compress(msg, step=step, kept=kept)
    tx = fwd if direction == "fwd" else LinkCompressor(config, direction="bwd")
    sent = tx.compress(msg, step=step, masks=kept) if direction == "bwd" else tx.compress(msg, step=step)
    data = encode(("fwd", step, 0, 0.01, 1.0, None), sent)
    ratio = config.ratio if config.mode == "topk" else 1.0
    assert tx.predicted_bytes({k: v.shape for k, v in msg.items()}, ratio, step) == _payload(data)


def test_max_ratio_caps_adatopk_on_an_idle_link_and_min_above_max_is_refused() -> None:
    """A link with time to spare would carry dense; with ``max_ratio`` the model trained through
    top-k keeps getting the kept count it was trained with, while a slow link still goes lower."""
    x = {"h": np.random.default_rng(0).standard_normal((8, 16, 32)).astype(np.float32)}
    config = CompressionConfig("adatopk", min_ratio=0.05, max_ratio=0.28125, row_topk=True, activations="topk",
                               values="int8")
    idle = LinkCompressor(config, bandwidth_bps=1e9, direction="fwd")
    assert idle.compress(x, budget_s=0.01)["h"].cols.shape[1] == 9 and idle.last_ratio == 0.28125
    slow = LinkCompressor(config, bandwidth_bps=1e6, direction="fwd")
    slow.compress(x, budget_s=0.005)
    assert 0.05 <= slow.last_ratio < 0.28125
    with pytest.raises(CompressionError, match="min_ratio=0.5 is above max_ratio=0.25"):
        CompressionConfig("adatopk", min_ratio=0.5, max_ratio=0.25)


def test_adatopk_keeps_all_but_one_column_where_only_a_sparse_layout_fits_the_budget() -> None:
    """Every column as int8 with a bitmask fits a budget the dense float32 message does not; ratio
    1 would send the dense one, so the ratio stops at the most a sparse message keeps (31 of 32)
    and what is encoded fits the budget."""
    x = {"h": np.random.default_rng(0).standard_normal((32, 16, 32)).astype(np.float32)}
    budget_s, bandwidth = 0.0258, 10e6
    assert x["h"].nbytes > bandwidth / 8 * budget_s  # 65.5 kB dense against a 32 kB budget
    config = CompressionConfig("adatopk", min_ratio=0.28125, max_ratio=1.0, row_topk=True, activations="topk",
                               values="int8-bf16")
    link = LinkCompressor(config, bandwidth_bps=bandwidth, direction="fwd")
    sent = link.compress(x, budget_s=budget_s)
    assert link.last_ratio == 31 / 32 and sent["h"].cols.shape[1] == 31
    assert len(encode(("fwd", 0, 0), sent)) <= bandwidth / 8 * budget_s
    fast = LinkCompressor(config, bandwidth_bps=100e6, direction="fwd")
    fast.compress(x, budget_s=budget_s)
    assert fast.last_ratio == 1.0  # the dense message fits at 100 Mbit/s


def test_hold_reaches_dense_from_within_the_band_below_it_after_patience() -> None:
    """31 of 32 is within a 25% band of 1, yet dense is another codec: a link that carries the
    dense message goes dense after ``patience`` messages, as any rise does."""
    hold = RatioHold(band=0.25, patience=3)
    hold.update(31 / 32)
    assert [hold.update(1.0) for _ in range(3)] == [31 / 32, 31 / 32, 1.0]
    assert hold.update(31 / 32) == 31 / 32  # and back at once
