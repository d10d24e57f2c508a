"""OP-Fence's predicted link bytes come from the codec: equal to the payload a run encodes."""

from __future__ import annotations

import struct
from dataclasses import replace

import numpy as np
import pytest

from innet.host.geo.codec import encode
from innet.host.geo.compress import CompressionConfig, LinkCompressor
from innet.host.geo.estimator import OpWorkload, boundary_shapes, measure
from innet.host.geo.graph import mlp
from innet.host.geo.opfence import PlanError, SiteNetwork, opfence, predict
from innet.host.geo.stages import boundaries

BATCH = 32


def _payload(data: bytes) -> int:
    (hlen,) = struct.unpack_from(">I", data)
    return len(data) - 4 - hlen


def _setup():
    g = mlp([64, 256, 48, 256, 10])
    feeds = {"x": np.zeros((BATCH, 64), np.float32), "y": np.zeros(BATCH, np.int64)}
    w = measure(g, g.init_params(0), feeds, repeats=1)
    devs = ("a", "b", "c")
    bw = {("a", "b"): 10.0, ("a", "c"): 50.0, ("b", "c"): 20.0}
    net = SiteNetwork(devs, bw, {k: 5.0 for k in bw})
    return g, w, net


@pytest.mark.parametrize("config", [CompressionConfig("topk", ratio=0.28125, row_topk=True),
                                    CompressionConfig("topk", ratio=0.25, row_topk=True, values="int8"),
                                    CompressionConfig("int8")])
def test_planned_link_bytes_equal_the_encoded_bytes(config: CompressionConfig) -> None:
    g, w, net = _setup()
    plan = opfence(g, w, net, [("a",), ("b",), ("c",)])
    size = {c.name: c.out_bytes for c in w.costs}
    shapes = [{v: (BATCH, size[v] // (BATCH * 4)) for v in live} for live in boundaries(g, plan.cuts)]
    ratio = config.ratio if config.mode == "topk" else 1.0
    tx = LinkCompressor(config, direction="fwd")
    scored = predict(g, w, net, plan.order, plan.cuts, ratios=[ratio] * len(plan.cuts),
                     codec=(tx, LinkCompressor(config, direction="bwd")), shapes=shapes, step=20)
    rng = np.random.default_rng(3)
    encoded = []
    for sh in shapes:
        msg = {k: rng.standard_normal(s).astype(np.float32) for k, s in sh.items()}
        encoded.append(_payload(encode(("fwd", 20, 0, 0.01, 1.0, None), tx.compress(msg, step=20))))
    assert list(scored.boundary_bytes) == encoded
    # the measured workload knows the shapes itself: the same bytes without them
    assert boundary_shapes(g, w, plan.cuts) == shapes
    unshaped = predict(g, w, net, plan.order, plan.cuts, ratios=[ratio] * len(plan.cuts),
                       codec=(tx, LinkCompressor(config, direction="bwd")), step=20)
    assert unshaped.boundary_bytes == scored.boundary_bytes and unshaped.step_s == scored.step_s
    dense = predict(g, w, net, plan.order, plan.cuts)
    assert all(s < d for s, d in zip(scored.boundary_bytes, dense.boundary_bytes))


def test_ratios_alone_charge_what_global_top_k_encodes() -> None:
    """Without a codec, ``ratios`` mean global top-k (a value and an index per kept element):
    charged by that codec's byte count, equal to what it encodes; dense boundaries stay dense."""
    g, w, net = _setup()
    plan = opfence(g, w, net, [("a",), ("b",), ("c",)])
    shapes = boundary_shapes(g, w, plan.cuts)
    assert shapes is not None
    ratios = [0.1, 1.0]
    scored = predict(g, w, net, plan.order, plan.cuts, ratios=ratios)
    rng = np.random.default_rng(5)
    encoded = []
    for sh, r in zip(shapes, ratios):
        tx = LinkCompressor(CompressionConfig("topk", ratio=r), direction="fwd")
        msg = {k: rng.standard_normal(s).astype(np.float32) for k, s in sh.items()}
        encoded.append(_payload(encode(("fwd", 0, 0, 0.01, 1.0, None), tx.compress(msg, step=0))))
    assert list(scored.boundary_bytes) == encoded
    assert scored.boundary_bytes[1] == predict(g, w, net, plan.order, plan.cuts).boundary_bytes[1]


def test_codec_bytes_without_shapes_is_one_clear_error() -> None:
    g, w, net = _setup()
    blind = OpWorkload(w.graph, tuple(replace(c, out_shape=None) for c in w.costs))
    c = LinkCompressor(CompressionConfig("int8"), direction="fwd")
    with pytest.raises(PlanError, match="shapes for each of 2 boundaries, got None"):
        predict(g, blind, net, [("a",), ("b",), ("c",)], (1, 3), codec=(c, c))
    with pytest.raises(PlanError, match="ratios for 1 boundaries, the plan has 2"):
        predict(g, w, net, [("a",), ("b",), ("c",)], (1, 3), ratios=[0.5])
