"""The single-process result that the geo data-parallel tests compare the sites' training with."""

from __future__ import annotations

from typing import Any, Sequence

from innet.host.geo.data import Digits
from innet.host.geo.graph import loss_and_grads, mlp
from innet.host.geo.stages import Sgd, SgdState


def averaged_sgd(sizes: Sequence[int], steps: int, batch: int, lr: float, replicas: int = 2) -> dict[str, Any]:
    """MLP parameters after ``steps`` of SGD on the gradients of ``replicas`` replicas averaged,
    replica r reading digits batches with seed ``1000 * r`` (as the tests' stage jobs do)."""
    g = mlp(list(sizes))
    params = g.init_params(0)
    opt = SgdState(Sgd(lr))
    data = [Digits.load(0).batches(batch, 1, 1000 * r) for r in range(replicas)]
    for _ in range(steps):
        acc: dict[str, Any] = {}
        for it in data:
            _, gr = loss_and_grads(g, next(it)[0], params, 1.0)
            for n, gp in gr.items():
                for k, v in gp.items():
                    acc.setdefault(n, {})[k] = acc.get(n, {}).get(k, 0) + v / replicas
        opt.step(params, acc)
    return params
