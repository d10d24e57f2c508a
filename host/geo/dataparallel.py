"""Data parallel across sites: the baseline a user reaches for first.

Every site holds a full replica of the model and trains on its own data; after each step
(M microbatches accumulated) the sites exchange their whole parameter gradient over the WAN
links, all-to-all (each site sends its gradient to every other site over their direct link,
which is the link the geo transport shapes), and every site applies the mean. With top-k,
each site sends the ``ratio`` largest elements of ``gradient + residual`` (error feedback,
:class:`ErrorFeedback`, exact) and the mean is taken over what was sent, own part
included, so the replicas stay identical.

:func:`train` runs the sites as threads in one process joined by in-process links shaped like
the WAN (:class:`ShapedChannel`): loopback-functional. :mod:`innet.host.geo.dp_process` runs
each site as its own process over TCP (on Mininet: on the site's host, across the WAN veths),
with the same per-site loop, :func:`run_site`.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from innet.host.geo.channel import Channel, LinkShape, QueueChannel, ShapedChannel
from innet.host.geo.codec import Int8Rows, Sparse, decode, encode
from innet.host.geo.compress import ErrorFeedback
from innet.host.geo.graph import Graph, ParamStore
from innet.host.geo.ops import Array
from innet.host.geo.stages import Sgd, SgdState, Stage, partition

INT8_ROW = 256
"""Gradient elements per int8 scale (data parallel sends one flat vector)."""

Feeds = Mapping[str, Array]


class DataParallelError(RuntimeError):
    """A data-parallel site failed or fell out of step; names the site."""


@dataclass
class SiteLog:
    """What site 0 records (the others train identically)."""

    steps: list[tuple[float, float]] = field(default_factory=list)
    """(training clock s, mean loss of the step) per step."""
    evals: list[tuple[float, int, float]] = field(default_factory=list)
    """(training clock s, step, test accuracy)."""
    sent_bytes: int = 0
    """Bytes site 0 sent over the WAN (all peers)."""


def _flatten(grads: ParamStore) -> tuple[Array, list[tuple[str, str, tuple[int, ...]]]]:
    layout = [(n, k, grads[n][k].shape) for n in sorted(grads) for k in sorted(grads[n])]
    vec = np.concatenate([grads[n][k].reshape(-1) for n, k, _ in layout]) if layout else np.zeros(0, np.float32)
    return vec, layout


def _unflatten(vec: Array, layout: Sequence[tuple[str, str, tuple[int, ...]]]) -> ParamStore:
    out: ParamStore = {}
    at = 0
    for n, k, shape in layout:
        size = int(np.prod(shape))
        out.setdefault(n, {})[k] = vec[at:at + size].reshape(shape)
        at += size
    return out


def run_site(i: int, sites: int, graph: Graph, params: ParamStore, links: Mapping[int, Channel],
             batches: Iterator[Sequence[Feeds]], steps: int, sgd: Sgd, ratio: float = 1.0,
             evaluate: Callable[[ParamStore], Any] | None = None, eval_every: int = 0, timeout: float = 120.0,
             on_step: Callable[[int, float, float], None] | None = None,
             on_eval: Callable[[int, float, Any], None] | None = None, codec: str = "topk") -> ParamStore:
    """Site ``i``'s training loop; ``links[j]`` reaches site ``j`` (a queue, a shaped link or
    TCP across the WAN). Each step's gradient goes to every peer from its own thread while this
    one receives (so no cycle of full TCP buffers can stall the sites). ``on_step(step, clock,
    loss)`` and ``on_eval(step, clock, evaluate(params))`` see the training clock (evaluation
    excluded). ``codec``: ``topk`` at ``ratio`` (below 1) or ``int8`` (rows of ``INT8_ROW``
    elements, a scale each), both with error feedback. Returns the replica's final parameters."""
    replica = {n: {k: v.copy() for k, v in p.items()} for n, p in params.items()}
    stage = Stage(graph, partition(graph, ())[0], replica)
    opt = SgdState(sgd)
    feedback = ErrorFeedback()
    clock = 0.0
    peers = [j for j in range(sites) if j != i]
    for step in range(steps):
        start = time.perf_counter()
        mbs = next(batches)
        losses = []
        for mb, feeds in enumerate(mbs):
            out = stage.forward(mb, {}, feeds)
            losses.append(float(out[graph.loss]))
            stage.backward(mb, {}, loss_scale=1.0 / len(mbs))
        vec, layout = _flatten(stage.take_grads())
        sent: Array | Sparse | Int8Rows
        if codec == "int8":
            padded = np.zeros(-(-vec.size // INT8_ROW) * INT8_ROW, vec.dtype)
            padded[:vec.size] = vec
            sent = feedback.int8("g", padded.reshape(-1, INT8_ROW))
        elif ratio < 1.0:
            sent = feedback.topk("g", vec, math.ceil(ratio * vec.size))
        else:
            sent = vec
        message = encode(("grad", step, i), {"g": sent})
        failed: list[BaseException] = []

        def send(j: int) -> None:
            try:
                links[j].send(message)
            except BaseException as error:  # reported below
                failed.append(error)

        senders = [threading.Thread(target=send, args=(j,), name=f"dp {i}->{j}") for j in peers]
        for t in senders:
            t.start()
        total = (sent if isinstance(sent, np.ndarray) else sent.dense()).reshape(-1)[:vec.size].astype(np.float64)
        for j in peers:
            tag, tensors = decode(links[j].recv(timeout))
            if tuple(tag) != ("grad", step, j):
                raise DataParallelError(f"data parallel site {i}: expected grad {step} from {j}, got {tag}")
            total += np.asarray(tensors["g"], np.float64).reshape(-1)[:vec.size]
        for t in senders:
            t.join(timeout)
        if failed:
            raise DataParallelError(f"data parallel site {i}: sending its gradient: {failed[0]}")
        opt.step(stage.params, _unflatten((total / sites).astype(vec.dtype), layout))
        clock += time.perf_counter() - start
        if on_step is not None:
            on_step(step, clock, float(np.mean(losses)))
        last = step == steps - 1
        if evaluate is not None and on_eval is not None and ((eval_every and (step + 1) % eval_every == 0) or last):
            on_eval(step, clock, evaluate(stage.params))
    return stage.params


def train(graph: Graph, params: ParamStore, sites: int, batches: Sequence[Iterator[Sequence[Feeds]]], steps: int,
          sgd: Sgd, shape: Callable[[int, int], LinkShape | None], ratio: float = 1.0,
          evaluate: Callable[[ParamStore], float] | None = None, eval_every: int = 0,
          timeout: float = 120.0) -> SiteLog:
    """Train ``steps`` steps with ``sites`` full replicas as threads; ``shape(i, j)`` is the
    link from site i to site j; ``ratio < 1`` sends top-k with error feedback. ``evaluate``
    (site 0, clock stopped) maps parameters to test accuracy."""
    check(sites, ratio)
    links: dict[tuple[int, int], Channel] = {}
    for i in range(sites):
        for j in range(i + 1, sites):
            a, b = QueueChannel.pair(f"wan {i}-{j}")
            sij, sji = shape(i, j), shape(j, i)
            links[(i, j)] = ShapedChannel(a, sij) if sij is not None else a
            links[(j, i)] = ShapedChannel(b, sji) if sji is not None else b
    log = SiteLog()
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            own = {j: links[(i, j)] for j in range(sites) if j != i}
            run_site(i, sites, graph, params, own, batches[i], steps, sgd, ratio, evaluate, eval_every, timeout,
                     (lambda step, t, loss: log.steps.append((t, loss))) if i == 0 else None,
                     (lambda step, t, acc: log.evals.append((t, step, acc))) if i == 0 else None)
            if i == 0:
                log.sent_bytes = sum(c.sent_bytes for c in own.values())
        except BaseException as error:  # reported by the caller
            errors.append(error)
            for link in links.values():
                link.close()

    threads = [threading.Thread(target=work, args=(i,), name=f"dp site {i}") for i in range(sites)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for link in links.values():
            link.close()
    if errors:
        raise DataParallelError(f"data parallel: {errors[0]}") from errors[0]
    return log


def check(sites: int, ratio: float) -> None:
    """Refuse settings data parallel cannot run, naming them."""
    if sites < 2:
        raise DataParallelError(f"data parallel: {sites} site; need at least 2")
    if not 0 < ratio <= 1:
        raise DataParallelError(f"data parallel: top-k ratio {ratio!r} must be within (0, 1]")


def evaluator(graph: Graph, feeds: Feeds, labels: Array, accuracy: Callable[[Array, Array], Any]) \
        -> Callable[[ParamStore], Any]:
    """Test accuracy of a replica: a forward pass of the whole graph, logits from the loss input."""
    plan = partition(graph, ())[0]

    def run(params: ParamStore) -> Any:
        stage = Stage(graph, plan, params)
        stage.forward(-1, {}, feeds)
        logits = stage.last_values[graph.node(graph.loss).inputs[0]]
        stage.discard(-1)
        return accuracy(logits, labels)

    return run


__all__ = ["DataParallelError", "SiteLog", "check", "evaluator", "run_site", "train"]
