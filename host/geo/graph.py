"""The OP-DAG: named nodes (an operator and the names of its inputs), feeds and a loss node.

Values are named by the node that produces them (or the feed); a node lists its inputs by
those names, so the graph *is* its data dependencies. Node order is a topological order
(checked), which is also the order a partition into pipeline stages cuts. Parameters are
initialised per node from ``(seed, node name)``, so a stage on another site creates exactly
the parameters of its own nodes without building anyone else's.

``run_forward``/``run_backward`` execute any list of nodes over a dict of values; a whole
graph and a pipeline stage run the same code.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from innet.host.geo.conv import Conv2d, GlobalAvgPool, ToImage
from innet.host.geo.ops import (Add, Array, CausalAttention, Embedding, Gelu, LayerNorm, Linear, Op, Params, Relu,
                                SoftmaxCrossEntropy)

ParamStore = dict[str, Params]
"""Parameters by node name, then by parameter name."""


class GraphError(ValueError):
    """A graph is malformed (unknown input, duplicate name, wrong order); the message names the node."""


@dataclass(frozen=True)
class Node:
    """One operator application."""

    name: str
    """Name of the node and of the value it produces."""
    op: Op
    """The operator."""
    inputs: tuple[str, ...]
    """Names of the values it consumes (feeds or earlier nodes), in the operator's order."""


class Graph:
    """Nodes in topological order, the feed names, and the node whose output is the loss."""

    def __init__(self, name: str, nodes: Sequence[Node], feeds: Sequence[str], loss: str) -> None:
        self.name = name
        self.nodes = tuple(nodes)
        self.feeds = tuple(feeds)
        self.loss = loss
        seen: set[str] = set(self.feeds)
        for node in self.nodes:
            if node.name in seen:
                raise GraphError(f"graph {name}: value name {node.name!r} is defined twice")
            if len(node.inputs) != node.op.arity:
                raise GraphError(f"graph {name}: node {node.name!r} ({node.op.describe()}) takes "
                                 f"{node.op.arity} inputs, got {len(node.inputs)}")
            for i in node.inputs:
                if i not in seen:
                    raise GraphError(f"graph {name}: node {node.name!r} reads {i!r}, which is neither a feed "
                                     "nor an earlier node")
            seen.add(node.name)
        if not self.nodes or self.nodes[-1].name != loss:
            raise GraphError(f"graph {name}: the loss node {loss!r} must be the last node")
        self.index = {n.name: i for i, n in enumerate(self.nodes)}

    def node(self, name: str) -> Node:
        try:
            return self.nodes[self.index[name]]
        except KeyError:
            raise GraphError(f"graph {self.name}: no node {name!r}") from None

    def consumers(self) -> dict[str, list[int]]:
        """For every value, the indices of the nodes that read it."""
        out: dict[str, list[int]] = {}
        for i, node in enumerate(self.nodes):
            for v in node.inputs:
                out.setdefault(v, []).append(i)
        return out

    def init_params(self, seed: int, names: Sequence[str] | None = None) -> ParamStore:
        """Parameters of ``names`` (default: every node), the same on every site for one seed."""
        out: ParamStore = {}
        for node in self.nodes if names is None else (self.node(n) for n in names):
            rng = np.random.default_rng([seed, zlib.crc32(node.name.encode())])
            params = node.op.init(rng)
            if params:
                out[node.name] = params
        return out

    def __len__(self) -> int:
        return len(self.nodes)


Contexts = dict[str, Any]


def run_forward(nodes: Sequence[Node], values: dict[str, Array], params: Mapping[str, Params]) -> Contexts:
    """Evaluate ``nodes`` in order, adding their outputs to ``values``; the contexts for backward."""
    ctxs: Contexts = {}
    for node in nodes:
        out, ctx = node.op.forward([values[i] for i in node.inputs], params.get(node.name, {}))
        values[node.name] = out
        ctxs[node.name] = ctx
    return ctxs


def run_backward(nodes: Sequence[Node], grads: dict[str, Array], ctxs: Contexts,
                 params: Mapping[str, Params], param_grads: ParamStore) -> None:
    """Back-propagate through ``nodes`` (reverse order). ``grads`` holds the gradients of
    values consumed after these nodes; gradients of their inputs are added to it and the
    parameter gradients are added to ``param_grads``."""
    for node in reversed(nodes):
        g = grads.pop(node.name, None)
        if g is None:
            continue  # nothing downstream depends on it (cannot happen for a well-formed loss graph)
        gin, gp = node.op.backward(ctxs[node.name], g, params.get(node.name, {}))
        for name, gi in zip(node.inputs, gin):
            if gi is not None:
                grads[name] = grads[name] + gi if name in grads else gi
        if gp:
            acc = param_grads.setdefault(node.name, {})
            for k, v in gp.items():
                acc[k] = acc[k] + v if k in acc else v


def loss_and_grads(graph: Graph, feeds: Mapping[str, Array], params: Mapping[str, Params],
                   scale: float = 1.0) -> tuple[float, ParamStore]:
    """Single-process reference: the loss and the parameter gradients of ``scale * loss``."""
    values: dict[str, Array] = dict(feeds)
    ctxs = run_forward(graph.nodes, values, params)
    loss = values[graph.loss]
    grads: dict[str, Array] = {graph.loss: np.asarray(scale, dtype=loss.dtype)}
    pg: ParamStore = {}
    run_backward(graph.nodes, grads, ctxs, params, pg)
    return float(loss), pg


# -- models ----------------------------------------------------------------------------


def mlp(sizes: Sequence[int], name: str = "mlp") -> Graph:
    """Classifier ``x -> Linear -> ReLU -> ... -> Linear -> cross-entropy(y)``."""
    if len(sizes) < 2:
        raise GraphError(f"mlp: needs at least an input and an output width, got {list(sizes)}")
    nodes: list[Node] = []
    prev = "x"
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        nodes.append(Node(f"fc{i}", Linear(a, b), (prev,)))
        prev = f"fc{i}"
        if i < len(sizes) - 2:
            nodes.append(Node(f"relu{i}", Relu(), (prev,)))
            prev = f"relu{i}"
    nodes.append(Node("loss", SoftmaxCrossEntropy(), (prev, "y")))
    return Graph(name, nodes, ("x", "y"), "loss")


def gpt(vocab: int, d: int, heads: int, layers: int, seq: int, name: str = "gpt") -> Graph:
    """A toy GPT-2: embeddings, ``layers`` pre-LN blocks (LN, attention, residual, LN, MLP
    with GELU, residual), a final LN and a language-model head, cross-entropy on next tokens.
    Feeds: ``tokens`` (B, T) and ``targets`` (B, T)."""
    nodes = [Node("emb", Embedding(vocab, d, seq), ("tokens",))]
    h = "emb"
    proj_std = 0.02 / np.sqrt(2 * max(layers, 1))
    for i in range(layers):
        p = f"b{i}"
        nodes += [
            Node(f"{p}ln1", LayerNorm(d), (h,)),
            Node(f"{p}qkv", Linear(d, 3 * d, std=0.02), (f"{p}ln1",)),
            Node(f"{p}attn", CausalAttention(d, heads), (f"{p}qkv",)),
            Node(f"{p}proj", Linear(d, d, std=proj_std), (f"{p}attn",)),
            Node(f"{p}res1", Add(), (h, f"{p}proj")),
            Node(f"{p}ln2", LayerNorm(d), (f"{p}res1",)),
            Node(f"{p}fc", Linear(d, 4 * d, std=0.02), (f"{p}ln2",)),
            Node(f"{p}gelu", Gelu(), (f"{p}fc",)),
            Node(f"{p}out", Linear(4 * d, d, std=proj_std), (f"{p}gelu",)),
            Node(f"{p}res2", Add(), (f"{p}res1", f"{p}out")),
        ]
        h = f"{p}res2"
    nodes += [Node("lnf", LayerNorm(d), (h,)),
              Node("head", Linear(d, vocab, std=0.02), ("lnf",)),
              Node("loss", SoftmaxCrossEntropy(), ("head", "targets"))]
    return Graph(name, nodes, ("tokens", "targets"), "loss")


GPT2_HEAD_DIM = 64
"""GPT-2's attention head width (768 / 12): shaped models keep it."""


def gpt2(vocab: int, width: int, layers: int | None = None, seq: int = 64, name: str = "gpt2") -> Graph:
    """A GPT-2-shaped model at ``width``: GPT-2's block (pre-LN, 4x GELU MLP, tied scale of the
    residual projections), heads of 64 wide (``width // 64`` heads, at least 1) and, unless
    given, ``layers = max(2, width // 64)`` so depth grows with width as GPT-2's family does
    (GPT-2 small is width 768, 12 layers, 12 heads)."""
    if width < 1 or (width >= GPT2_HEAD_DIM and width % GPT2_HEAD_DIM):
        raise GraphError(f"gpt2: width {width} must be a multiple of {GPT2_HEAD_DIM} (or below it)")
    heads = max(1, width // GPT2_HEAD_DIM)
    return gpt(vocab, width, heads, layers if layers is not None else max(2, width // GPT2_HEAD_DIM), seq, name)


def resnet(widths: Sequence[int] = (8, 16), classes: int = 10, image: Sequence[int] = (1, 8, 8),
           name: str = "resnet") -> Graph:
    """A small ResNet (He et al.) without batch norm: a 3x3 stem, one basic block per width
    (conv-ReLU-conv plus the skip, then ReLU; a block that widens halves the resolution with
    stride 2 and a 1x1 projection on its skip), global average pooling and a linear head.
    Feeds: ``x`` (B, C*H*W), as the digits task gives it, and ``y`` (B,)."""
    if not widths or min(widths) < 1:
        raise GraphError(f"resnet: widths must be a non-empty list of positive channel counts, got {list(widths)}")
    c, h, w = image
    nodes = [Node("img", ToImage(c, h, w), ("x",)),
             Node("stem", Conv2d(c, widths[0]), ("img",)), Node("stem_relu", Relu(), ("stem",))]
    prev, c_prev = "stem_relu", widths[0]
    for i, width in enumerate(widths):
        p, stride = f"r{i}", 1 if width == c_prev else 2
        nodes += [Node(f"{p}c1", Conv2d(c_prev, width, stride=stride), (prev,)),
                  Node(f"{p}relu1", Relu(), (f"{p}c1",)),
                  # the last conv of a block starts small so each block begins near identity
                  Node(f"{p}c2", Conv2d(width, width, std=0.1 * np.sqrt(2.0 / (9 * width))), (f"{p}relu1",))]
        skip = prev
        if stride != 1:
            nodes.append(Node(f"{p}proj", Conv2d(c_prev, width, k=1, stride=stride, padding=0, bias=False), (prev,)))
            skip = f"{p}proj"
        nodes += [Node(f"{p}add", Add(), (skip, f"{p}c2")), Node(f"{p}relu2", Relu(), (f"{p}add",))]
        prev, c_prev = f"{p}relu2", width
    nodes += [Node("pool", GlobalAvgPool(), (prev,)), Node("fc", Linear(c_prev, classes), ("pool",)),
              Node("loss", SoftmaxCrossEntropy(), ("fc", "y"))]
    return Graph(name, nodes, ("x", "y"), "loss")


MODELS = {"mlp": mlp, "gpt": gpt, "gpt2": gpt2, "resnet": resnet}
