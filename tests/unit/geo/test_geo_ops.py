"""Every OP-DAG operator's backward against central finite differences (float64)."""

from __future__ import annotations

import numpy as np
import pytest

from innet.host.geo import ops
from testkit.gradcheck import numeric_gradient


def _check(op: ops.Op, xs: list[np.ndarray], float_inputs: list[int]) -> None:
    rng = np.random.default_rng(0)
    params = {k: v.astype(np.float64) for k, v in op.init(rng).items()}
    for v in params.values():
        v += rng.standard_normal(v.shape) * 0.1  # away from the init's symmetric values
    out, _ = op.forward(xs, params)
    weights = rng.standard_normal(np.shape(out))

    def objective() -> float:
        return float(np.sum(op.forward(xs, params)[0] * weights))

    _, ctx = op.forward(xs, params)
    gin, gp = op.backward(ctx, weights, params)
    for i in float_inputs:
        np.testing.assert_allclose(gin[i], numeric_gradient(objective, xs[i]), rtol=1e-5, atol=1e-7)
    for k, v in params.items():
        np.testing.assert_allclose(gp[k], numeric_gradient(objective, v), rtol=1e-5, atol=1e-7)


def test_linear_backward_matches_finite_differences() -> None:
    _check(ops.Linear(5, 3), [np.random.default_rng(1).standard_normal((2, 4, 5))], [0])


def test_relu_and_gelu_backward() -> None:
    x = np.random.default_rng(2).standard_normal((3, 6)) + 0.05  # keep off ReLU's kink
    _check(ops.Relu(), [x.copy()], [0])
    _check(ops.Gelu(), [x.copy()], [0])


def test_layernorm_backward() -> None:
    _check(ops.LayerNorm(6), [np.random.default_rng(3).standard_normal((2, 3, 6))], [0])


def test_add_backward() -> None:
    rng = np.random.default_rng(4)
    _check(ops.Add(), [rng.standard_normal((2, 3)), rng.standard_normal((2, 3))], [0, 1])


def test_causal_attention_backward() -> None:
    _check(ops.CausalAttention(8, 2), [np.random.default_rng(5).standard_normal((2, 4, 24))], [0])


def test_causal_attention_does_not_look_ahead() -> None:
    op = ops.CausalAttention(4, 1)
    x = np.random.default_rng(6).standard_normal((1, 5, 12))
    y = x.copy()
    y[0, 4] += 10.0  # change only the last position
    np.testing.assert_array_equal(op.forward([x], {})[0][0, :4], op.forward([y], {})[0][0, :4])


def test_embedding_backward() -> None:
    op = ops.Embedding(7, 4, 5)
    ids = np.array([[1, 3, 3], [0, 6, 1]])
    _check(op, [ids], [])


def test_cross_entropy_backward() -> None:
    rng = np.random.default_rng(7)
    _check(ops.SoftmaxCrossEntropy(), [rng.standard_normal((2, 3, 5)), rng.integers(0, 5, (2, 3))], [0])


def test_operator_errors_name_the_operator() -> None:
    with pytest.raises(ops.OpError, match=r"Linear\(5, 3\): input has width 4"):
        ops.Linear(5, 3).forward([np.zeros((2, 4))], ops.Linear(5, 3).init(np.random.default_rng(0)))
    with pytest.raises(ops.OpError, match="width 10 is not a multiple of heads 3"):
        ops.CausalAttention(10, 3)
