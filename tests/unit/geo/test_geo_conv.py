"""Convolution, pooling and reshape operators: finite differences and torch's conv2d."""

from __future__ import annotations

import numpy as np
import pytest

from innet.host.geo.conv import Conv2d, GlobalAvgPool, ToImage
from innet.host.geo.ops import OpError
from testkit.gradcheck import numeric_gradient


@pytest.mark.parametrize("stride,padding", [(1, 1), (2, 1), (1, 0), (2, 0)])
def test_conv2d_backward_matches_finite_differences(stride: int, padding: int) -> None:
    rng = np.random.default_rng(0)
    op = Conv2d(2, 3, k=3, stride=stride, padding=padding)
    p = {k: v.astype(np.float64) + rng.standard_normal(v.shape) * 0.1 for k, v in op.init(rng).items()}
    x = rng.standard_normal((2, 2, 5, 6))
    proj = rng.standard_normal(op.forward([x], p)[0].shape)

    def f() -> float:
        return float((op.forward([x], p)[0] * proj).sum())

    out, ctx = op.forward([x], p)
    (gx,), gp = op.backward(ctx, proj, p)
    np.testing.assert_allclose(gx, numeric_gradient(f, x), rtol=1e-6, atol=1e-7)
    for k in p:
        np.testing.assert_allclose(gp[k], numeric_gradient(f, p[k]), rtol=1e-6, atol=1e-7)


def test_pool_and_reshape_backward() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 4))
    proj = rng.standard_normal((2, 3))
    out, ctx = GlobalAvgPool().forward([x], {})
    (gx,), _ = GlobalAvgPool().backward(ctx, proj, {})
    np.testing.assert_allclose(gx, numeric_gradient(lambda: float((GlobalAvgPool().forward([x], {})[0] * proj).sum()), x))
    flat = rng.standard_normal((2, 12))
    img, ctx = ToImage(3, 2, 2).forward([flat], {})
    assert img.shape == (2, 3, 2, 2)
    assert ToImage(3, 2, 2).backward(ctx, img, {})[0][0].shape == (2, 12)


def test_conv2d_matches_torch() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    rng = np.random.default_rng(2)
    op = Conv2d(3, 4, k=3, stride=2, padding=1)
    p = {k: v.astype(np.float64) for k, v in op.init(rng).items()}
    p["b"] += rng.standard_normal(4)
    x = rng.standard_normal((2, 3, 7, 7))
    g = rng.standard_normal(op.forward([x], p)[0].shape)
    out, ctx = op.forward([x], p)
    (gx,), gp = op.backward(ctx, g, p)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(p["w"], requires_grad=True)
    tb = torch.tensor(p["b"], requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, tb, stride=2, padding=1)
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(out, ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gp["w"], tw.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gp["b"], tb.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_conv_errors_name_the_operator() -> None:
    with pytest.raises(OpError, match=r"Conv2d\(2, 3, k=3, stride=1, padding=1\): input must be \(N, 2, H, W\)"):
        Conv2d(2, 3).forward([np.zeros((1, 3, 4, 4))], Conv2d(2, 3).init(np.random.default_rng(0)))
    with pytest.raises(OpError, match="channels, kernel and stride must be >= 1"):
        Conv2d(0, 3)
    with pytest.raises(OpError, match=r"ToImage\(1, 8, 8\): input must be \(N, 64\)"):
        ToImage(1, 8, 8).forward([np.zeros((2, 63))], {})


def test_resnet_graph_gradients_and_training() -> None:
    from innet.host.geo.data import Digits
    from innet.host.geo.graph import loss_and_grads, resnet

    g = resnet((4, 8))
    assert [n.name for n in g.nodes][:3] == ["img", "stem", "stem_relu"] and "r1proj" in g.index
    rng = np.random.default_rng(3)
    p = {k: {kk: vv.astype(np.float64) for kk, vv in v.items()} for k, v in g.init_params(0).items()}
    feeds = {"x": rng.standard_normal((3, 64)), "y": np.array([1, 4, 7])}
    _, grads = loss_and_grads(g, feeds, p)
    w = p["r0c1"]["w"]
    num = numeric_gradient(lambda: loss_and_grads(g, feeds, p)[0], w)
    np.testing.assert_allclose(grads["r0c1"]["w"], num, rtol=1e-5, atol=1e-8)

    data = Digits.load(0)
    p32 = g.init_params(0)
    it = data.batches(32, 1, 0)
    losses = []
    for _ in range(120):
        loss, grads = loss_and_grads(g, next(it)[0], p32)
        losses.append(loss)
        for k, gk in grads.items():
            for kk, v in gk.items():
                p32[k][kk] -= 0.3 * v
    assert np.mean(losses[-20:]) < np.mean(losses[:20]) - 0.3
