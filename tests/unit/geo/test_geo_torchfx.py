"""PyTorch models in the OP-DAG: a traced module trains across pipeline
stages, one of them numpy and the others torch, exactly like the module in one torch process."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (optional dependency) is not installed")

from innet.host.geo import torch_models  # noqa: E402
from innet.host.geo.graph import loss_and_grads  # noqa: E402
from innet.host.geo.rad import run_threads  # noqa: E402
from innet.host.geo.specs import TorchSpec  # noqa: E402
from innet.host.geo.stage_process import build_model  # noqa: E402
from innet.host.geo.stages import Sgd, partition  # noqa: E402
from innet.host.geo.torchfx import TorchModelError, from_torch  # noqa: E402

SIZES = (8, 16, 12, 3)


def _module(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch_models.mlp(SIZES).double()


def _steps(n: int, m: int) -> list[list[dict[str, np.ndarray]]]:
    """The same microbatches every step (so the loss must fall)."""
    rng = np.random.default_rng(1)
    return [[{"x": rng.standard_normal((5, SIZES[0])), "y": rng.integers(0, SIZES[-1], 5)} for _ in range(m)]] * n


def _torch_reference(module: torch.nn.Module, steps: list, lr: float, momentum: float) -> list[float]:
    """The same training in one torch process: mean loss over microbatches, SGD with momentum."""
    opt = torch.optim.SGD(module.parameters(), lr=lr, momentum=momentum)
    losses = []
    for mbs in steps:
        opt.zero_grad()
        loss = sum(torch.nn.functional.cross_entropy(module(torch.from_numpy(f["x"])), torch.from_numpy(f["y"]))
                   for f in mbs) / len(mbs)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def test_traced_graph_matches_torch_loss_and_gradients() -> None:
    module = _module()
    graph = from_torch(module)
    assert graph.feeds == ("x", "y") and graph.loss == "loss"
    feeds = _steps(1, 1)[0][0]
    loss, grads = loss_and_grads(graph, feeds, graph.init_params(0))
    ref = torch.nn.functional.cross_entropy(module(torch.from_numpy(feeds["x"])), torch.from_numpy(feeds["y"]))
    ref.backward()
    assert loss == pytest.approx(float(ref.detach()), rel=1e-12)
    first = graph.nodes[0].name
    np.testing.assert_allclose(grads[first]["weight"], module.layers[0].weight.grad.numpy(), rtol=1e-10)


def test_numpy_stage_and_torch_stages_train_like_one_torch_process() -> None:
    """Stage 0 runs the hand-written numpy operators, stages 1 and 2 run torch autograd; the
    pipeline (activations forward, gradients back over the in-process links) ends within float
    tolerance of the module trained in one torch process."""
    cuts = (3, 5)
    probe = from_torch(_module())
    numpy_nodes = partition(probe, cuts)[0].nodes
    graph = from_torch(_module(), numpy_nodes=numpy_nodes)
    kinds = [type(n.op).__name__ for n in graph.nodes]
    assert kinds[:3] == ["Preset", "Relu", "Preset"] and set(kinds[3:]) == {"TorchOp"}
    steps = _steps(6, 3)
    result = run_threads(graph, cuts, graph.init_params(0), steps, Sgd(0.1, 0.9))
    reference = _module()
    ref_losses = _torch_reference(reference, steps, 0.1, 0.9)
    np.testing.assert_allclose(result.losses, ref_losses, rtol=1e-9)
    for i, layer in enumerate(reference.layers):
        name = f"layers_{i}"
        if name in numpy_nodes:  # numpy Linear keeps x @ w with w = weight.T
            np.testing.assert_allclose(result.params[name]["w"], layer.weight.detach().numpy().T, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(result.params[name]["b"], layer.bias.detach().numpy(), rtol=1e-9, atol=1e-12)
        else:
            np.testing.assert_allclose(result.params[name]["weight"], layer.weight.detach().numpy(), rtol=1e-9,
                                       atol=1e-12)
    assert ref_losses[-1] < ref_losses[0]


def test_torch_gpt_pipeline_matches_the_whole_graph() -> None:
    """Attention, views and a residual stream across two boundaries, all torch nodes."""
    torch.manual_seed(0)
    module = torch_models.gpt(vocab=11, d=8, heads=2, layers=1, seq=4).double()
    graph = from_torch(module, target="targets")
    rng = np.random.default_rng(0)
    toks = rng.integers(0, 11, (3, 5))
    feeds = {"tokens": toks[:, :-1], "targets": toks[:, 1:]}
    params = graph.init_params(0)
    loss, _ = loss_and_grads(graph, feeds, params)
    result = run_threads(graph, (len(graph) // 3, 2 * len(graph) // 3), params, [[feeds]] * 3, Sgd(0.5))
    assert result.losses[0] == pytest.approx(loss, rel=1e-12)
    assert result.losses[-1] < result.losses[0]


def test_build_model_rebuilds_a_torch_model_from_its_spec() -> None:
    spec = TorchSpec(factory="innet.host.geo.torch_models:mlp", kwargs={"sizes": list(SIZES)},
                     numpy_nodes=("layers_0",), target="y", seed=3)
    a, b = build_model(spec), build_model(spec)
    pa, pb = a.init_params(0), b.init_params(0)
    np.testing.assert_array_equal(pa["layers_1"]["weight"], pb["layers_1"]["weight"])
    assert type(a.nodes[0].op).__name__ == "Preset"


def test_unknown_operator_is_named() -> None:
    class Odd(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cumsum(self.fc(x), dim=-1)

    with pytest.raises(TorchModelError, match="unknown operator cumsum"):
        from_torch(Odd())

    class Conv(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv1d(1, 1, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(x)

    with pytest.raises(TorchModelError, match="unknown operator Conv1d"):
        from_torch(Conv())


def test_numpy_node_without_a_numpy_operator_is_named() -> None:
    torch.manual_seed(0)
    with pytest.raises(TorchModelError, match="'loss'|no numpy operator"):
        from_torch(torch_models.gpt(vocab=11, d=8, heads=2, layers=1, seq=4), target="targets",
                   numpy_nodes=["blocks_0_qkv", "view"])


def test_traced_resnet_matches_torch_and_runs_convs_in_numpy() -> None:
    torch.manual_seed(0)
    module = torch_models.resnet((4, 8)).double()
    rng = np.random.default_rng(4)
    feeds = {"x": rng.standard_normal((3, 64)), "y": np.array([0, 5, 9])}
    ref = torch.nn.functional.cross_entropy(module(torch.from_numpy(feeds["x"])), torch.from_numpy(feeds["y"]))
    ref.backward()
    graph = from_torch(module)
    assert any(n.op.describe().startswith("torch Conv2d") for n in graph.nodes)
    loss, grads = loss_and_grads(graph, feeds, graph.init_params(0))
    assert loss == pytest.approx(float(ref.detach()), rel=1e-12)
    convs = [n.name for n in graph.nodes if "Conv2d" in n.op.describe() or "AdaptiveAvgPool" in n.op.describe()]
    hetero = from_torch(module, numpy_nodes=convs)
    assert all(not hetero.node(n).op.describe().startswith("torch") for n in convs)
    loss_np, grads_np = loss_and_grads(hetero, feeds, hetero.init_params(0))
    assert loss_np == pytest.approx(loss, rel=1e-10)
    stem = convs[0]
    np.testing.assert_allclose(grads_np[stem]["w"], module.stem.weight.grad.numpy(), rtol=1e-8)
