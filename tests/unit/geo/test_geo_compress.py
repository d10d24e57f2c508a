"""Top-k with error feedback: exact bookkeeping, fixed and adaptive ratios, and the codec."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from innet.host.geo.codec import CodecError, Sparse, decode, encode
from innet.host.geo.compress import CompressionConfig, CompressionError, ErrorFeedback, LinkCompressor, adaptive_ratio


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), k=st.integers(1, 300), steps=st.integers(1, 6))
def test_sent_plus_residual_equals_input_plus_old_residual_bit_for_bit(seed: int, n: int, k: int, steps: int) -> None:
    rng = np.random.default_rng(seed)
    ef = ErrorFeedback()
    for _ in range(steps):
        x = rng.standard_normal(n).astype(np.float32)
        old = ef.residuals.get("t", np.zeros(n, np.float32)).copy()
        acc = x + old  # what error feedback compresses this step
        sent = ef.topk("t", x, k)
        new = ef.residuals["t"]
        assert len(sent.indices) == min(k, n)
        assert np.array_equal((sent.dense() + new).view(np.uint32), acc.view(np.uint32))
        assert not np.any(new[sent.indices])  # a sent element leaves nothing behind
        rest = np.setdiff1d(np.arange(n), sent.indices)
        assert np.abs(acc[rest]).max(initial=0) <= np.abs(sent.values).min()


def test_nothing_is_lost_across_steps_with_exact_values() -> None:
    """Integers in float64 add exactly: everything sent plus the last residual is the sum of inputs."""
    rng = np.random.default_rng(3)
    ef = ErrorFeedback()
    total_in = np.zeros((4, 5))
    total_sent = np.zeros((4, 5))
    for _ in range(20):
        x = rng.integers(-1000, 1000, (4, 5)).astype(np.float64)
        total_in += x
        total_sent += ef.topk("w", x, 3).dense()
    assert np.array_equal(total_sent + ef.residuals["w"], total_in)


def test_dense_send_flushes_the_residual() -> None:
    ef = ErrorFeedback()
    ef.topk("a", np.array([5.0, 1.0, -2.0]), 1)
    np.testing.assert_array_equal(ef.dense("a", np.array([1.0, 1.0, 1.0])), [1.0, 2.0, -1.0])
    assert "a" not in ef.residuals


def test_adaptive_ratio_fits_the_budget() -> None:
    # 10 Mbit/s for 10 ms = 12500 bytes; 100000 float32 need 400 kB dense, 8 B per sparse element
    assert adaptive_ratio(100_000, 4, 10e6, 0.010, 0.001) == pytest.approx(12500 / 800_000)
    assert adaptive_ratio(1000, 4, 1e9, 0.010, 0.01) == 1.0  # fits dense
    assert adaptive_ratio(100_000, 4, 1e6, 0.001, 0.05) == 0.05  # floored


def test_link_compressor_modes() -> None:
    x = {"h": np.arange(100, dtype=np.float32).reshape(10, 10), "ids": np.arange(3)}
    none = LinkCompressor(CompressionConfig("none")).compress(x)
    assert none["h"] is x["h"]
    topk = LinkCompressor(CompressionConfig("topk", ratio=0.1)).compress(x)
    assert isinstance(topk["h"], Sparse) and len(topk["h"].indices) == 10 and topk["ids"] is x["ids"]
    np.testing.assert_array_equal(topk["h"].indices, np.arange(90, 100))
    ada = LinkCompressor(CompressionConfig("adatopk", min_ratio=0.01), bandwidth_bps=8e6)
    out = ada.compress(x, budget_s=40 * 8 / 8e6)  # 40 bytes: 5 sparse elements
    assert len(out["h"].indices) == 5 and ada.last_ratio == pytest.approx(0.05)
    with pytest.raises(CompressionError, match="adatopk needs the link's measured bandwidth"):
        LinkCompressor(CompressionConfig("adatopk")).compress(x, budget_s=1.0)


def test_bad_settings_are_named() -> None:
    with pytest.raises(CompressionError, match="compression mode 'top': must be one of none, int8, topk, adatopk"):
        CompressionConfig("top")
    with pytest.raises(CompressionError, match=r"compression ratio=0: must be within \(0, 1\]"):
        CompressionConfig("topk", ratio=0)


def test_codec_round_trip_dense_and_sparse() -> None:
    sp = Sparse((2, 3), np.array([1, 5], np.uint32), np.array([7.0, -1.0], np.float32))
    tag, out = decode(encode(("fwd", 3, 1), {"a": np.ones((2, 2), np.float64), "s": sp}))
    assert tag == ("fwd", 3, 1)
    np.testing.assert_array_equal(out["a"], np.ones((2, 2)))
    np.testing.assert_array_equal(out["s"], [[0, 7, 0], [0, 0, -1]])
    assert len(encode(0, {"s": sp})) < len(encode(0, {"s": sp.dense()})) + 64
    with pytest.raises(CodecError, match="truncated"):
        decode(encode(0, {"a": np.ones(10)})[:-1])


def test_activations_go_without_error_feedback_unless_asked() -> None:
    """A forward residual belongs to other samples: by default only gradients keep one."""
    x = np.array([[4.0, 1.0, -3.0, 0.5]], np.float32)
    fwd = LinkCompressor(CompressionConfig("topk", ratio=0.5), direction="fwd")
    fwd.compress({"h": x})
    assert fwd.feedback.residuals == {}
    bwd = LinkCompressor(CompressionConfig("topk", ratio=0.5), direction="bwd")
    bwd.compress({"g": x})
    np.testing.assert_array_equal(bwd.feedback.residuals["g"], [[0.0, 1.0, 0.0, 0.5]])
    both = LinkCompressor(CompressionConfig("topk", ratio=0.5, feedback_activations=True), direction="fwd")
    both.compress({"h": x})
    assert "h" in both.feedback.residuals


def test_row_topk_keeps_every_rows_largest_elements() -> None:
    """Per-row top-k on activations: each token's vector keeps its own share, none is dropped whole
    (whole-tensor top-k keeps only the large row here)."""
    x = np.array([[10.0, 20.0, -30.0, 40.0], [0.1, -0.4, 0.2, 0.3]], np.float32)
    rows = LinkCompressor(CompressionConfig("topk", ratio=0.5, row_topk=True), direction="fwd").compress({"h": x})
    np.testing.assert_array_equal(rows["h"].cols, [[2, 3], [1, 3]])
    np.testing.assert_array_equal(rows["h"].values, x[[[0, 0], [1, 1]], [[2, 3], [1, 3]]])
    whole = LinkCompressor(CompressionConfig("topk", ratio=0.5), direction="fwd").compress({"h": x})
    np.testing.assert_array_equal(whole["h"].indices, [0, 1, 2, 3])
    # gradients keep whole-tensor top-k (error feedback carries the rest)
    grads = LinkCompressor(CompressionConfig("topk", ratio=0.5, row_topk=True), direction="bwd").compress({"h": x})
    np.testing.assert_array_equal(grads["h"].indices, [0, 1, 2, 3])


def test_warmup_sends_dense_for_the_first_steps() -> None:
    c = LinkCompressor(CompressionConfig("topk", ratio=0.1, warmup_steps=2), direction="bwd")
    x = {"g": np.arange(20, dtype=np.float32)}
    assert isinstance(c.compress(x, step=1)["g"], np.ndarray) and c.last_ratio == 1.0
    assert isinstance(c.compress(x, step=2)["g"], Sparse) and c.last_ratio == 0.1


def test_int8_activations_when_they_fit_the_ratios_bytes() -> None:
    """At ratio 0.25 top-k would send 0.25 x (4 + 4) = 2 bytes per element: int8 + a scale per
    row (1 + 4/width) fits, so activations go quantised; at 0.1 (0.8 bytes) they go top-k."""
    from innet.host.geo.codec import Int8Rows

    rng = np.random.default_rng(0)
    x = {"h": rng.standard_normal((3, 5, 16)).astype(np.float32)}
    c = LinkCompressor(CompressionConfig("topk", ratio=0.25, activations="int8-fit"), direction="fwd")
    q = c.compress(x)["h"]
    assert isinstance(q, Int8Rows)
    tag, back = decode(encode(("fwd", 0, 0), {"h": q}))
    np.testing.assert_allclose(back["h"], x["h"], atol=np.abs(x["h"]).max() / 127 / 2 + 1e-7)
    assert back["h"].dtype == np.float32 and q.nbytes == 3 * 5 * 16 + 3 * 5 * 4 < x["h"].nbytes / 3
    low = LinkCompressor(CompressionConfig("topk", ratio=0.1, activations="int8-fit"), direction="fwd")
    assert isinstance(low.compress(x)["h"], Sparse)
    grads = LinkCompressor(CompressionConfig("topk", ratio=0.25, activations="int8-fit"), direction="bwd")
    assert isinstance(grads.compress(x)["h"], Sparse)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 20), width=st.integers(1, 40), steps=st.integers(1, 6),
       dtype=st.sampled_from([np.float32, np.float64]), spread=st.floats(-20, 20))
def test_int8_error_feedback_is_exact_bit_for_bit(seed: int, rows: int, width: int, steps: int,
                                                  dtype: type, spread: float) -> None:
    """int8 gradients keep the rounding error as the residual: what the receiver decodes plus the
    new residual is the input plus the old residual, exactly, like top-k's split."""
    rng = np.random.default_rng(seed)
    ef = ErrorFeedback()
    for _ in range(steps):
        x = (rng.standard_normal((rows, width)) * np.exp(rng.uniform(-abs(spread), abs(spread), (rows, width))))
        x = x.astype(dtype)
        acc = ef.accumulate("g", x)
        sent = ef.int8("g", x)
        _, back = decode(encode(("bwd", 0, 0), {"g": sent}))
        assert back["g"].dtype == dtype
        assert np.array_equal(back["g"] + ef.residuals["g"], acc)
        # half an int8 step, plus the float rounding of q * scale at the value's own magnitude
        # (measured: 4.5e-6 of the half step for a float32 value of 1.49 with a scale of 0.025)
        half_step = np.abs(acc).max(axis=-1, keepdims=True) / 254 * (1 + 1e-6)
        assert np.all(np.abs(ef.residuals["g"]) <= half_step + 2 * np.spacing(np.abs(acc)))


def _policy_message() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {"h": rng.standard_normal((4, 16, 32)).astype(np.float32), "ids": np.arange(4, dtype=np.int64)}


def test_int8_activations_policy_every_forward_message_int8_gradients_topk() -> None:
    """``activations="int8"``: below ratio 1 a forward tensor always goes int8 per row (even at 5%,
    where it costs more bytes than top-k would), keeping every token's vector; gradients go top-k
    at the ratio with error feedback; integer tensors go as they are."""
    from innet.host.geo.codec import Int8Rows

    msg = _policy_message()
    n, rows = 4 * 16 * 32, 4 * 16
    config = CompressionConfig("adatopk", min_ratio=0.05, activations="int8")
    crawl = 1e3  # bit/s: the ratio sits on its 5% floor
    fwd = LinkCompressor(config, bandwidth_bps=crawl, direction="fwd").compress(msg, budget_s=0.01)
    assert isinstance(fwd["h"], Int8Rows) and fwd["h"].nbytes == n + 4 * rows  # 1 byte/element + a scale per row
    assert fwd["ids"] is msg["ids"]
    np.testing.assert_allclose(fwd["h"].dense(), msg["h"], rtol=0,
                               atol=float(np.abs(msg["h"]).max()) / 254 * (1 + 1e-6))
    wire = len(encode(("fwd", 0, 0), fwd))
    assert n + 4 * rows < wire < n + 4 * rows + 400 + msg["ids"].nbytes  # header + ids only beside it
    bwd_link = LinkCompressor(config, bandwidth_bps=crawl, direction="bwd")
    bwd = bwd_link.compress({"h": msg["h"]}, budget_s=0.01)
    k = int(np.ceil(0.05 * n))
    assert isinstance(bwd["h"], Sparse) and len(bwd["h"].indices) == k and bwd["h"].nbytes == 8 * k
    assert "h" in bwd_link.feedback.residuals
    # int8-fit (the old opt-in) keeps top-k at 5%: 0.05 x 8 bytes < 1 + 4/32
    assert isinstance(LinkCompressor(CompressionConfig("topk", ratio=0.05, activations="int8-fit"),
                                     direction="fwd").compress(msg)["h"], Sparse)
    # topk (old behaviour) sparsifies activations too
    assert isinstance(LinkCompressor(CompressionConfig("topk", ratio=0.05), direction="fwd").compress(msg)["h"], Sparse)


def test_int8_gradients_policy_and_adatopk_sends_dense_when_it_fits() -> None:
    """``gradients="int8"``: the backward goes int8 with the residual kept; under AdaTopK a message
    that fits the budget goes dense in both directions (flushing the residual), and one that does
    not goes int8 forward."""
    from innet.host.geo.codec import Int8Rows

    msg = {"h": _policy_message()["h"]}
    n = msg["h"].size
    config = CompressionConfig("adatopk", min_ratio=0.05, activations="int8", gradients="int8",
                               ratio_patience=1)
    slow, fast = 1e6, 1e9  # bit/s: 64 KiB takes ~0.5 s vs ~0.5 ms
    bwd = LinkCompressor(config, bandwidth_bps=slow, direction="bwd")
    sent = bwd.compress(msg, budget_s=0.01)
    assert isinstance(sent["h"], Int8Rows) and bwd.last_ratio < 1 and "h" in bwd.feedback.residuals
    bwd.bandwidth_bps = fast
    dense = bwd.compress(msg, budget_s=0.01)["h"]
    assert isinstance(dense, np.ndarray) and bwd.last_ratio == 1.0 and bwd.feedback.residuals == {}
    fwd = LinkCompressor(config, bandwidth_bps=slow, direction="fwd")
    assert isinstance(fwd.compress(msg, budget_s=0.01)["h"], Int8Rows) and fwd.feedback.residuals == {}
    fwd.bandwidth_bps = fast
    assert isinstance(fwd.compress(msg, budget_s=0.01)["h"], np.ndarray)
    assert n * 4 == msg["h"].nbytes


def test_bad_activation_and_gradient_codecs_are_named() -> None:
    with pytest.raises(CompressionError, match="activations='fp4'"):
        CompressionConfig(activations="fp4")
    with pytest.raises(CompressionError, match="gradients='int8-fit'"):
        CompressionConfig(gradients="int8-fit")
    with pytest.raises(CompressionError, match="feedback_activations"):
        CompressionConfig(activations="int8", feedback_activations=True)
    with pytest.raises(CompressionError, match="mode 'topk' with activations='int8' sends int8, not top-k"):
        CompressionConfig("topk", activations="int8")
    with pytest.raises(CompressionError, match="gradients='masked'.*needs activations='topk' with row_topk"):
        CompressionConfig("topk", gradients="masked")
    with pytest.raises(CompressionError, match="reference='key': applies to per-row top-k"):
        CompressionConfig("topk", reference="key")


def _activations(seed: int = 0, rows: int = 64, width: int = 32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows // 16, 16, width)).astype(np.float32)


@pytest.mark.parametrize("values", ["fp32", "int8", "int8-bf16"])
def test_per_row_topk_sends_k_values_and_indices_and_reports_its_encoded_bytes(values: str) -> None:
    """Top-k at ratio r really sends ceil(r * width) values per row and which columns they are, as
    a bitmask of the row (4 bytes for 32 columns, smaller than 8 one-byte indices; int8 values:
    plus a float32 scale per row, or a bfloat16 one), nothing else; ``nbytes`` is what the wire
    carries."""
    from innet.host.geo.codec import TopkRows

    x = _activations()
    rows, width = 64, 32
    sent = LinkCompressor(CompressionConfig("topk", ratio=0.25, row_topk=True, values=values),
                          direction="fwd").compress({"h": x})["h"]
    assert isinstance(sent, TopkRows) and sent.cols.shape == (rows, 8) and sent.cols.dtype == np.uint8
    value_bytes = 4 if values == "fp32" else 1
    scale_bytes = {"fp32": 0, "int8": 4, "int8-bf16": 2}[values]
    assert sent.nbytes == rows * (4 + 8 * value_bytes + scale_bytes)
    empty = encode(("fwd", 0, 0), {"h": TopkRows((4, 16, width), np.zeros((rows, 0), np.uint8),
                                                 np.zeros((rows, 0), sent.values.dtype), sent.scale, sent.dtype,
                                                 scale16=sent.scale16)})
    data = encode(("fwd", 0, 0), {"h": sent})
    header = len(b'"mask": true') - len(b'"mask": false')  # the one header field that differs
    assert len(data) == len(empty) + header + rows * (4 + 8 * value_bytes)
    assert len(data) == 4 + int.from_bytes(data[:4], "big") + sent.nbytes
    got = decode(encode(("fwd", 0, 0), {"h": sent}))[1]["h"]
    kept = np.abs(x.reshape(rows, width))
    threshold = np.sort(kept, axis=1)[:, -8][:, None]
    assert np.array_equal(got.reshape(rows, width) != 0, kept >= threshold)  # exactly the 8 largest
    tol = np.abs(x).max(axis=-1, keepdims=True) / 254 * (1.01 if values == "int8-bf16" else 1.001) \
        if values != "fp32" else 0
    np.testing.assert_allclose(got[got != 0], x[got != 0], atol=float(np.max(tol)), rtol=0)


def test_masked_gradient_goes_back_at_the_forward_columns_without_indices() -> None:
    """With ``gradients="masked"`` the backward message holds only the values at the columns the
    forward top-k kept (the exact gradient of the sparsified forward), and the sending stage
    places them with the columns it remembered."""
    from innet.host.geo.codec import MaskedRows

    config = CompressionConfig("topk", ratio=0.25, row_topk=True, gradients="masked", activations="topk")
    x, g = _activations(1), _activations(2)
    kept: dict[str, np.ndarray] = {}
    LinkCompressor(config, direction="fwd").compress({"h": x}, kept=kept)
    back = LinkCompressor(config, direction="bwd").compress({"h": g}, masks=kept)["h"]
    assert isinstance(back, MaskedRows) and back.nbytes == 64 * 8 * 4
    wire = decode(encode(("bwd", 0, 0), {"h": back}))[1]["h"]
    assert isinstance(wire, MaskedRows)
    dense = wire.dense(kept["h"]).reshape(64, 32)
    mask = np.zeros((64, 32), bool)
    np.put_along_axis(mask, kept["h"].astype(np.intp), True, axis=1)
    np.testing.assert_array_equal(dense[mask], g.reshape(64, 32)[mask])
    assert not dense[~mask].any()
    with pytest.raises(CodecError, match="masked gradient of"):
        wire.dense(kept["h"][:, :4])


def test_error_feedback_on_activations_keeps_what_per_row_topk_drops() -> None:
    """Per-row top-k with feedback: the residual is exactly what was not sent, and it is added to
    the next message before choosing its top k."""
    config = CompressionConfig("topk", ratio=0.25, row_topk=True, activations="topk", feedback_activations=True)
    tx = LinkCompressor(config, direction="fwd")
    x = _activations(3)
    sent = tx.compress({"h": x})["h"].dense()
    np.testing.assert_array_equal(sent + tx.feedback.residuals["h"], x)
    y = _activations(4)
    second = tx.compress({"h": y})["h"].dense()
    np.testing.assert_allclose(second + tx.feedback.residuals["h"], y + (x - sent), rtol=0, atol=1e-6)


def test_key_reference_stays_in_step_at_both_ends_and_shrinks_the_error() -> None:
    """``reference="key"``: the sender sparsifies the deviation from a per-token reference row,
    the receiver adds its own copy back; both copies stay bit-identical without being sent, and
    rows that repeat a token's vector lose far less than plain top-k."""
    rng = np.random.default_rng(5)
    table = rng.standard_normal((8, 32)).astype(np.float32) * 3
    config = CompressionConfig("topk", ratio=0.125, row_topk=True, activations="topk", gradients="masked",
                               reference="key", reference_rate=0.9)
    tx, rx = LinkCompressor(config, direction="fwd"), LinkCompressor(config, direction="fwd")
    plain = LinkCompressor(replace(config, reference="none"), direction="fwd")
    errors, plain_errors = [], []
    for _ in range(12):
        tokens = rng.integers(0, 8, (4, 16))
        x = table[tokens] + 0.05 * rng.standard_normal((4, 16, 32)).astype(np.float32)
        msg = decode(encode(("fwd", 0, 0), tx.compress({"h": x}, keys=tokens)), densify=False)[1]["h"]
        got = rx.receive("h", msg, tokens)
        errors.append(float(np.sum((got - x) ** 2) / np.sum(x ** 2)))
        plain_errors.append(float(np.sum((plain.compress({"h": x})["h"].dense() - x) ** 2) / np.sum(x ** 2)))
    assert np.array_equal(tx.reference.tables["h"], rx.reference.tables["h"])
    assert errors[-1] < 0.01 < 0.3 < plain_errors[-1], (errors, plain_errors)
    with pytest.raises(CompressionError, match="reference keys of shape"):
        tx.compress({"h": x}, keys=tokens[:2])


def test_a_dense_adatopk_message_moves_both_references() -> None:
    """AdaTopK sends dense when the message fits: the receiver (``rad``) moves its reference
    towards the dense rows, so the sender must too, or the two copies part and every later
    top-k message is rebuilt on the wrong rows."""
    config = CompressionConfig("adatopk", min_ratio=0.1, row_topk=True, activations="topk", gradients="masked",
                               reference="key")
    tx, rx = LinkCompressor(config, direction="fwd"), LinkCompressor(config, direction="fwd")
    rng = np.random.default_rng(7)
    for bandwidth in (1e3, 1e12, 1e3):  # top-k, dense, top-k
        tx.bandwidth_bps = bandwidth
        tokens = rng.integers(0, 8, (4, 16))
        x = rng.standard_normal((4, 16, 32)).astype(np.float32)
        sent = decode(encode(("fwd", 0, 0), tx.compress({"h": x}, budget_s=0.01, keys=tokens)), densify=False)[1]["h"]
        if isinstance(sent, np.ndarray):
            rx.observe("h", sent, tokens)
        else:
            rx.receive("h", sent, tokens)
    assert np.array_equal(tx.reference.tables["h"], rx.reference.tables["h"])


def test_int4_rows_send_half_a_byte_per_element_and_a_bfloat16_scale_exactly() -> None:
    """``Int4Rows``: 4-bit values (-7..7) two per byte and a bfloat16 scale per row; what the
    receiver decodes is exactly what the sender's error feedback counted as sent, down to
    gradients far below float16's range, and an odd element count still round-trips."""
    from innet.host.geo.codec import Int4Rows

    rng = np.random.default_rng(3)
    for x in (rng.standard_normal((4, 16, 32)).astype(np.float32) * 1e-7,
              rng.standard_normal((3, 33)).astype(np.float32)):
        t = Int4Rows.of(x)
        rows = x.size // x.shape[-1]
        assert t.nbytes == (x.size + 1) // 2 + 2 * rows and int(np.abs(t.q).max()) == 7
        data = encode(("bwd", 0, 0), {"g": t})
        assert len(data) == 4 + int.from_bytes(data[:4], "big") + t.nbytes  # length, JSON header, buffers
        got = decode(data)[1]["g"]
        assert np.array_equal(got, t.dense())
        # each element within half a step of its row's scale (the scale rounded to bfloat16 first)
        assert np.all(np.abs(got - x) <= 0.5 * t.scale[..., None] * (1 + 1e-6) + 1e-45)
    zero = Int4Rows.of(np.zeros((2, 8), np.float32))
    assert np.array_equal(decode(encode("z", {"g": zero}))[1]["g"], np.zeros((2, 8), np.float32))


def test_int4_gradients_go_back_for_every_column_with_error_feedback() -> None:
    """``gradients="int4"``: the backward message is every column's gradient as ``Int4Rows``
    (warm-up steps too), the rounding error kept and added to the next message; the cost model
    charges what is sent."""
    from innet.host.geo.codec import Int4Rows

    config = CompressionConfig("topk", ratio=0.28125, row_topk=True, activations="topk", gradients="int4",
                               values="int8", warmup_steps=2, warmup="int8")
    bwd = LinkCompressor(config, direction="bwd")
    g1, g2 = _activations(4), _activations(5)
    for step in (0, 5):  # a warm-up step and a top-k step
        first = bwd.compress({"h": g1}, step=step)["h"]
        assert isinstance(first, Int4Rows) and bwd.last_codecs == ("int4",)
        assert bwd.predicted_bytes({"h": g1.shape}, config.ratio, step) == first.nbytes == 64 * (16 + 2)
        np.testing.assert_array_equal(bwd.feedback.residuals["h"], g1 - first.dense())
        second = bwd.compress({"h": g2}, step=step + 1)["h"]
        assert np.array_equal(second.dense(), Int4Rows.of(g2 + (g1 - first.dense())).dense())
        bwd.feedback.residuals.clear()
