"""PyTorch models in the OP-DAG: a ``torch.nn.Module`` traced with ``torch.fx`` becomes a Graph.

Every node of the traced graph becomes one OP-DAG node with the fx node's name; a stage made
of such nodes runs each of them forward under torch autograd and backward with
``torch.autograd.grad`` on the graph that forward recorded. Values between nodes, and across
sites, stay numpy arrays, so the pipeline, the codec, compression and remote autodiff
(activations forward, gradients back over the stage boundaries) are the ones the numpy
models use: nothing in ``rad`` or ``stage_process`` knows a node is torch.

Heterogeneous software: nodes named in ``numpy_nodes`` are translated to the hand-written
numpy operators instead (``nn.Linear``, ReLU, tanh-GELU, ``nn.LayerNorm``, residual add), with
the module's own initial weights, so one site can run numpy and the next torch in the same
pipeline. Parameters come from the module (not from the graph's seed): build the module the
same way on every site (a factory and ``torch.manual_seed``).

Only operators listed here are accepted; anything else is a :class:`TorchModelError` naming
the node and the operator, so a model the pipeline cannot run is refused at build time, not
half-way through training. torch is imported only by this module's functions.
"""

from __future__ import annotations

import importlib
import operator
from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Sequence

import numpy as np

from innet.host.geo.conv import Conv2d, GlobalAvgPool
from innet.host.geo.graph import Graph, GraphError, Node
from innet.host.geo.ops import Add, Array, Gelu, LayerNorm, Linear, Op, OpError, Params, Relu, SoftmaxCrossEntropy


class TorchModelError(GraphError):
    """A module cannot become an OP-DAG (unknown operator, shared module, bad factory); names it."""


@dataclass(frozen=True)
class InputRef:
    """Placeholder for the ``index``-th input inside an fx node's argument template."""

    index: int


def _modules() -> dict[type, str]:
    import torch.nn as nn

    return {nn.Linear: "Linear", nn.ReLU: "ReLU", nn.GELU: "GELU", nn.Tanh: "Tanh", nn.LayerNorm: "LayerNorm",
            nn.Embedding: "Embedding", nn.Identity: "Identity", nn.Flatten: "Flatten", nn.Softmax: "Softmax",
            nn.Conv2d: "Conv2d", nn.AdaptiveAvgPool2d: "AdaptiveAvgPool2d", nn.MaxPool2d: "MaxPool2d",
            nn.AvgPool2d: "AvgPool2d"}


def _functions() -> dict[Any, str]:
    import torch
    import torch.nn.functional as F

    return {operator.add: "add", operator.mul: "mul", operator.truediv: "truediv", operator.getitem: "getitem",
            operator.matmul: "matmul", torch.add: "torch.add", torch.mul: "torch.mul", torch.matmul: "torch.matmul",
            torch.relu: "torch.relu", torch.tanh: "torch.tanh", torch.flatten: "torch.flatten",
            torch.softmax: "torch.softmax", torch.tril: "torch.tril", torch.ones: "torch.ones", torch.arange: "torch.arange",
            operator.eq: "eq",
            F.relu: "F.relu", F.gelu: "F.gelu", F.softmax: "F.softmax", F.layer_norm: "F.layer_norm",
            F.linear: "F.linear", F.cross_entropy: "F.cross_entropy", F.embedding: "F.embedding",
            F.conv2d: "F.conv2d", F.adaptive_avg_pool2d: "F.adaptive_avg_pool2d", torch.mean: "torch.mean"}


METHODS = frozenset({"view", "reshape", "transpose", "permute", "contiguous", "masked_fill", "softmax",
                     "flatten", "relu", "tanh", "matmul", "unsqueeze", "squeeze", "mean"})
"""Tensor methods a traced model may call."""


def _to_torch(x: Array, grad: bool) -> Any:
    import torch

    a = np.asarray(x)
    t = torch.from_numpy(a if a.flags.writeable else a.copy())
    if grad and t.is_floating_point():
        t.requires_grad_(True)
    return t


class TorchOp(Op):
    """One fx node run by torch: forward records the autograd graph, backward differentiates it."""

    def __init__(self, label: str, call: Callable[[list[Any], dict[str, Any]], Any], arity: int,
                 params: Mapping[str, Array]) -> None:
        self.label = label
        self.call = call
        self.arity = arity
        self.preset = {k: np.array(v, copy=True) for k, v in params.items()}

    def init(self, rng: np.random.Generator) -> Params:
        return {k: v.copy() for k, v in self.preset.items()}

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        import torch

        ts = [_to_torch(x, True) for x in xs]
        ps = {k: _to_torch(v, True) for k, v in p.items()}
        with torch.enable_grad():
            try:
                out = self.call(ts, ps)
            except (RuntimeError, TypeError, IndexError, ValueError) as error:
                raise OpError(f"{self.label}: {' '.join(str(error).split())}") from None
        if not isinstance(out, torch.Tensor):
            raise OpError(f"{self.label}: returned {type(out).__name__}, not a tensor (only tensors flow "
                          "between OP-DAG nodes)")
        return out.detach().numpy(), (out, ts, ps)

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        import torch

        out, ts, ps = ctx
        wrt = [t for t in ts if t.requires_grad] + list(ps.values())
        if not out.requires_grad or not wrt:
            return [None] * len(ts), {}
        grads = torch.autograd.grad(out, wrt, grad_outputs=torch.as_tensor(np.asarray(g)).to(out.dtype),
                                    allow_unused=True, retain_graph=True)  # the estimator times backward repeatedly
        it = iter(grads)
        gin: list[Array | None] = []
        for t in ts:
            if t.requires_grad:
                gi = next(it)
                gin.append(np.zeros(tuple(t.shape), np.dtype(str(t.dtype).removeprefix("torch.")))
                           if gi is None else gi.numpy())
            else:
                gin.append(None)
        gp = {}
        for k, v in ps.items():
            gk = next(it)
            gp[k] = np.zeros(tuple(v.shape), v.detach().numpy().dtype) if gk is None else gk.numpy()
        return gin, gp

    def describe(self) -> str:
        return self.label


class Preset(Op):
    """A numpy operator whose parameters start from given arrays (a torch module's weights)."""

    def __init__(self, op: Op, params: Mapping[str, Array]) -> None:
        self.op = op
        self.arity = op.arity
        self.preset = {k: np.array(v, copy=True) for k, v in params.items()}

    def init(self, rng: np.random.Generator) -> Params:
        return {k: v.copy() for k, v in self.preset.items()}

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        return self.op.forward(xs, p)

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        return self.op.backward(ctx, g, p)

    def describe(self) -> str:
        return f"numpy {self.op.describe()}"


def _cross_entropy(inputs: list[Any], params: dict[str, Any]) -> Any:
    import torch.nn.functional as F

    logits, targets = inputs
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class FlatPool(GlobalAvgPool):
    """``nn.AdaptiveAvgPool2d(1)`` in numpy: the global mean kept as ``(N, C, 1, 1)``."""

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        out, ctx = super().forward(xs, p)
        return out[:, :, None, None], ctx

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        return super().backward(ctx, g[:, :, 0, 0], p)


def _numpy_op(node: Any, module: Any, label: str, arity: int) -> Op:
    """The numpy operator for a traced node (heterogeneous stages), or a TorchModelError."""
    import torch.nn as nn

    def arr(t: Any) -> Array:
        return np.array(t.detach().cpu().numpy(), copy=True)

    if node.op == "call_module":
        if isinstance(module, nn.Linear) and module.bias is not None:
            return Preset(Linear(module.in_features, module.out_features),
                          {"w": arr(module.weight).T.copy(), "b": arr(module.bias)})
        if isinstance(module, nn.ReLU):
            return Relu()
        if isinstance(module, nn.GELU) and module.approximate == "tanh":
            return Gelu()
        if isinstance(module, nn.LayerNorm) and len(module.normalized_shape) == 1 and module.elementwise_affine:
            return Preset(LayerNorm(module.normalized_shape[0], module.eps),
                          {"g": arr(module.weight), "b": arr(module.bias)})
        if (isinstance(module, nn.Conv2d) and module.groups == 1 and module.dilation == (1, 1)
                and module.kernel_size[0] == module.kernel_size[1] and module.stride[0] == module.stride[1]
                and isinstance(module.padding, tuple) and module.padding[0] == module.padding[1]
                and module.padding_mode == "zeros"):
            conv = Conv2d(module.in_channels, module.out_channels, module.kernel_size[0], module.stride[0],
                          module.padding[0], bias=module.bias is not None)
            return Preset(conv, {"w": arr(module.weight), **({"b": arr(module.bias)} if conv.bias else {})})
        if isinstance(module, nn.AdaptiveAvgPool2d) and module.output_size in (1, (1, 1)):
            return Preset(FlatPool(), {})
    elif node.op == "call_function" and arity == 2 and not node.kwargs and len(node.args) == 2:
        import torch

        if node.target in (operator.add, torch.add):
            return Add()
    raise TorchModelError(f"traced model: node {node.name!r} ({label}) has no numpy operator (numpy runs "
                          "nn.Linear with bias, ReLU, GELU(approximate='tanh'), LayerNorm, square nn.Conv2d, "
                          "AdaptiveAvgPool2d(1) and tensor + tensor)")


def from_torch(module: Any, name: str = "torch", target: str = "y",
               numpy_nodes: Collection[str] = ()) -> Graph:
    """Trace ``module`` (its ``forward`` returns logits) and append a cross-entropy loss against
    the feed ``target``. Feeds: the forward's arguments, then ``target``. Nodes named in
    ``numpy_nodes`` run the hand-written numpy operators instead of torch."""
    try:
        import torch
        import torch.fx as fx
    except ImportError as error:
        raise TorchModelError(f"torch models need PyTorch ({error})") from None
    if not isinstance(module, torch.nn.Module):
        raise TorchModelError(f"traced model: expected a torch.nn.Module, got {type(module).__name__}")
    try:
        gm = fx.symbolic_trace(module)
    except Exception as error:  # fx raises many kinds (TraceError, TypeError, ...) on untraceable code
        raise TorchModelError(f"traced model {type(module).__name__}: torch.fx cannot trace it: "
                              f"{' '.join(str(error).split())[:300]}") from None
    modules, functions = _modules(), _functions()
    feeds: list[str] = []
    nodes: list[Node] = []
    called: set[str] = set()
    logits: str | None = None
    unused = set(numpy_nodes)
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            feeds.append(n.name)
            continue
        if n.op == "output":
            if not isinstance(n.args[0], fx.Node):
                raise TorchModelError(f"traced model {type(module).__name__}: forward must return one tensor (logits)")
            logits = n.args[0].name
            continue
        inputs: list[str] = []

        def ref(arg: Any) -> Any:
            if arg.name not in inputs:
                inputs.append(arg.name)
            return InputRef(inputs.index(arg.name))

        args = fx.node.map_arg(n.args, ref)
        kwargs = fx.node.map_arg(n.kwargs, ref)
        sub: Any = None
        params: dict[str, Array] = {}
        if n.op == "call_module":
            sub = gm.get_submodule(n.target)
            kind = modules.get(type(sub))
            if kind is None:
                raise TorchModelError(f"traced model: unknown operator {type(sub).__name__} (module "
                                      f"{n.target!r}, node {n.name!r})")
            if n.target in called:
                raise TorchModelError(f"traced model: module {n.target!r} is called twice (shared parameters "
                                      "across OP-DAG nodes are not supported)")
            called.add(n.target)
            label = f"{kind}({n.target})"
            params = {k: np.array(v.detach().cpu().numpy(), copy=True) for k, v in sub.named_parameters()}
            call = _module_call(sub, args, kwargs)
        elif n.op == "call_function":
            fname = functions.get(n.target)
            if fname is None:
                raise TorchModelError(f"traced model: unknown operator {getattr(n.target, '__name__', n.target)} "
                                      f"(function, node {n.name!r})")
            label = fname
            call = _function_call(n.target, args, kwargs)
        elif n.op == "call_method":
            if n.target not in METHODS:
                raise TorchModelError(f"traced model: unknown operator Tensor.{n.target} (method, node {n.name!r})")
            label = f"Tensor.{n.target}"
            call = _method_call(str(n.target), args, kwargs)
        else:  # get_attr: a constant tensor (fx folds e.g. ``torch.ones(T, T)``) or a buffer
            value = _attr(gm, n.target)
            if isinstance(value, torch.nn.Parameter) or not isinstance(value, torch.Tensor):
                raise TorchModelError(f"traced model: unknown operator get_attr {n.target!r} (node {n.name!r}); "
                                      "wrap parameters in a module such as nn.Linear")
            label = f"constant {n.target}"
            call = _constant(value.detach().clone())
        if n.name in numpy_nodes:
            unused.discard(n.name)
            op: Op = _numpy_op(n, sub, label, len(inputs))
        else:
            op = TorchOp(f"torch {label}", call, len(inputs), params)
        nodes.append(Node(n.name, op, tuple(inputs)))
    if unused:
        raise TorchModelError(f"traced model: numpy_nodes {sorted(unused)} are not nodes of the traced graph")
    if logits is None or logits in feeds:
        raise TorchModelError("traced model: forward returns no computed tensor")
    if target in feeds or any(nd.name == target for nd in nodes):
        raise TorchModelError(f"traced model: the target feed name {target!r} is already used in the graph")
    if "loss" in numpy_nodes:
        nodes.append(Node("loss", SoftmaxCrossEntropy(), (logits, target)))
    else:
        nodes.append(Node("loss", TorchOp("torch F.cross_entropy", _cross_entropy, 2, {}), (logits, target)))
    return Graph(name, nodes, (*feeds, target), "loss")


Call = Callable[[list[Any], dict[str, Any]], Any]


def _module_call(sub: Any, args: Any, kwargs: Any) -> Call:
    def call(ts: list[Any], ps: dict[str, Any]) -> Any:
        import torch.func

        return torch.func.functional_call(sub, ps, tuple(_fill(args, ts)), dict(_fill(kwargs, ts)))

    return call


def _function_call(fn: Any, args: Any, kwargs: Any) -> Call:
    def call(ts: list[Any], ps: dict[str, Any]) -> Any:
        return fn(*_fill(args, ts), **_fill(kwargs, ts))

    return call


def _method_call(method: str, args: Any, kwargs: Any) -> Call:
    def call(ts: list[Any], ps: dict[str, Any]) -> Any:
        a = _fill(args, ts)
        return getattr(a[0], method)(*a[1:], **_fill(kwargs, ts))

    return call


def _constant(value: Any) -> Call:
    def call(ts: list[Any], ps: dict[str, Any]) -> Any:
        return value

    return call


def _attr(gm: Any, target: str) -> Any:
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _fill(template: Any, ts: list[Any]) -> Any:
    from torch.fx.node import map_aggregate

    return map_aggregate(template, lambda a: ts[a.index] if isinstance(a, InputRef) else a)


def load_factory(spec: str, kwargs: Mapping[str, Any], seed: int) -> Any:
    """``package.module:callable`` called with ``kwargs`` after ``torch.manual_seed(seed)``: the same
    module (weights included) on every site."""
    import torch

    mod_name, _, attr = spec.partition(":")
    if not mod_name or not attr:
        raise TorchModelError(f"torch model factory {spec!r}: expected 'package.module:callable'")
    try:
        factory = getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError) as error:
        raise TorchModelError(f"torch model factory {spec!r}: {error}") from None
    torch.manual_seed(seed)
    return factory(**kwargs)
