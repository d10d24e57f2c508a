"""Remote autodiff (RAD): pipeline stages on different sites, activations forward, gradients back.

A :class:`StageRunner` owns one stage, the link to the previous stage and the link to the
next. One training step with M microbatches (GPipe order) is:

1. for each microbatch: receive the boundary values from the previous stage (stage 0 has
   none), run the stage forward, send the values crossing the next boundary;
2. for each microbatch in reverse: receive the gradients of those values from the next
   stage (the last stage starts from the loss), run backward, send the gradients of the
   received values back;
3. optionally reduce the parameter gradients across the data-parallel replicas of the site
   (``reducer``: the site switch's sum job through the host agent), then SGD.

Messages are tagged ``(kind, step, microbatch)`` and checked, so a link that reorders or a
stage that falls out of step is an error, never a silent mix-up. Compression applies per
link direction (``LinkCompressor``); ``probe_next``/``answer_prev`` measure the link's
bandwidth and one-way delay first. During training every message carries its send time, the
receiver measures the rate it arrived at (:class:`ThroughputMeter`) and returns the
estimate in the tag of its next message the other way, so AdaTopK's ratio follows the
boundary's current throughput.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from innet.host.geo.channel import Channel, LinkShape, QueueChannel, ShapedChannel
from innet.host.geo.codec import Int8Rows, MaskedRows, TopkRows, decode, encode
from innet.host.geo.compress import CompressionConfig, LinkCompressor
from innet.host.geo.graph import Graph, ParamStore
from innet.host.geo.ops import Array
from innet.host.geo.stages import Sgd, SgdState, Stage, StagePlan, partition
from innet.host.geo.throughput import WAITED_S, ThroughputMeter

Feeds = Mapping[str, Array]
Reducer = Callable[[ParamStore], ParamStore]
PROBE_BYTES = 1 << 18
PROBE_ROUNDS = 3
"""Round trips per probe size; the fastest counts."""
PROBE_TARGET_S = 2.0
"""Seconds of serialisation the second, larger probe should take on a link the first probe
read as fast. Why: a TCP transfer pays a fixed start-up (the congestion window regrows after
the application-limited small probe), about 50 ms at 8 Mbit/s and 80 ms round trip on
Mininet; over a 256 kB probe (0.26 s there) that read 6.5 of 8 Mbit/s, over 1 MB 7.66 (the
rate less the frames' headers). At 2 s the start-up is under 3% of the probe."""
PROBE_MAX_BYTES = 4 << 20
"""The large probe's cap: at 100 Mbit/s and above the first probe is already long enough
relative to its start-up to read within a few percent."""


class RadError(RuntimeError):
    """The pipeline fell out of step (unexpected message, missing stage); names stage and message."""


@dataclass
class StageStats:
    """What a stage measured during a run."""

    compute_s: float = 0.0
    """Forward plus backward time, summed."""
    microbatches: int = 0
    ratios_next: list[float] = field(default_factory=list)
    """Compression ratio of each forward message (1.0: dense)."""
    ratios_prev: list[float] = field(default_factory=list)
    """Compression ratio of each backward message."""
    bandwidth_next_bps: float | None = None
    """Probed bandwidth of the link to the next stage."""
    rate_next_bps: list[float] = field(default_factory=list)
    """The next stage's measured rate of this stage's forward messages, as each estimate arrived."""
    reduce_s: float = 0.0
    """Time in the data-parallel gradient reduction."""
    codecs_next: dict[str, int] = field(default_factory=dict)
    """How many forward tensors went as each codec (``dense``, ``int8``, ``top-k``, ``top-k+int8``)."""
    codecs_prev: dict[str, int] = field(default_factory=dict)
    """The same for backward tensors (plus ``masked``, ``masked+int8``)."""
    bytes_next: int = 0
    """Encoded bytes of the training messages sent forward."""
    sizes_next: list[int] = field(default_factory=list)
    """Encoded bytes of each forward training message (what AdaTopK's ratio did to the wire)."""
    bytes_prev: int = 0
    """Encoded bytes of the training messages sent backward."""


class StageRunner:
    """One stage with its links; call :meth:`step` once per training step on every stage."""

    def __init__(self, stage: Stage, prev: Channel | None, next: Channel | None, sgd: Sgd,
                 compress_next: CompressionConfig | None = None, compress_prev: CompressionConfig | None = None,
                 reducer: Reducer | None = None, timeout: float = 60.0,
                 receive_prev: CompressionConfig | None = None, clock: Callable[[], float] = time.time,
                 timer: Callable[[], float] = time.perf_counter) -> None:
        self.stage = stage
        self.clock = clock
        """Wall clock of the send stamps and arrival times the rate meters use; both ends of a link
        must agree on it (a test gives each stage a virtual clock that its links keep consistent,
        which makes the link's timing exact)."""
        self.timer = timer
        """Clock of the compute times (the pipeline period AdaTopK budgets against) and the probe."""
        self.prev, self.next = prev, next
        self.opt = SgdState(sgd)
        self.tx_next = LinkCompressor(compress_next or CompressionConfig(), direction="fwd")
        self.tx_prev = LinkCompressor(compress_prev or CompressionConfig(), direction="bwd")
        self.rx_prev = LinkCompressor(receive_prev or compress_prev or CompressionConfig(), direction="fwd")
        """The receiving end of the previous stage's forward compressor (its shared reference rows)."""
        self.reducer = reducer
        self.timeout = timeout
        self.stats = StageStats()
        self.meter_prev = ThroughputMeter()
        """Rate of the messages arriving from the previous stage (the forward direction)."""
        self.meter_next = ThroughputMeter()
        """Rate of the messages arriving from the next stage (the backward direction)."""
        self._kept: dict[int, dict[str, Array]] = {}
        """Per microbatch, the columns this stage's forward top-k kept (its masked gradients come back there)."""
        self._masks: dict[int, dict[str, Array]] = {}
        """Per microbatch, the columns the previous stage's top-k kept (this stage's gradients go there)."""
        self._mb_compute: float | None = None
        self._reported: dict[str, float] = {}
        """The pipeline period each neighbour last reported (``prev`` / ``next``)."""

    @property
    def period_s(self) -> float:
        """Largest compute time per microbatch of any stage (the pipeline's period): this stage's
        own (an EMA) or what a neighbour last reported, which carries the stages beyond it. The
        latest values, not the largest ever seen: one slow first step (measured: 118 ms against
        0.6 ms after) would otherwise fix the budget for the whole run and AdaTopK would send
        dense over a link too slow for it."""
        return max([self._mb_compute or 0.0, *self._reported.values()])

    def _period_towards(self, kind: str) -> float:
        """The period to report in a ``fwd`` (to the next stage) or ``bwd`` message: this stage's
        own and what came from the other side only, so no stage hears its own value echoed."""
        other = self._reported.get("prev" if kind == "fwd" else "next", 0.0)
        return max(self._mb_compute or 0.0, other)

    def link_state(self) -> dict[str, Array]:
        """The compressors' state a re-plan carries (``LinkCompressor.state``), per role:
        ``fwd/`` what this stage sends forward (its residuals, reference rows, held ratio),
        ``bwd/`` what it sends back, ``rx/`` the reference rows it keeps as a receiver."""
        out: dict[str, Array] = {}
        for role, c, names in (("fwd", self.tx_next, self.stage.plan.outputs),
                               ("bwd", self.tx_prev, self.stage.plan.inputs),
                               ("rx", self.rx_prev, self.stage.plan.inputs)):
            out.update({f"{role}/{k}": v for k, v in c.state(names).items()})
        return out

    def restore_link_state(self, state: Mapping[str, Array]) -> None:
        """Take up what the stages of an earlier plan learnt about the tensors this stage sends
        and receives in this one (``link_state`` of any of them): after a re-plan error feedback
        keeps its residuals and a referenced top-k its shared rows, which both new link ends get
        from the same old copy (a sender's and a receiver's are identical)."""
        def role(prefix: str) -> dict[str, Array]:
            return {k[len(prefix) + 1:]: v for k, v in state.items() if k.startswith(prefix + "/")}

        fwd, bwd, rx = role("fwd"), role("bwd"), role("rx")
        shared = {k: v for k, v in {**rx, **fwd}.items() if k.startswith("reference/")}
        self.tx_next.load_state({**fwd, **shared}, self.stage.plan.outputs)
        self.rx_prev.load_state(shared, self.stage.plan.inputs)
        self.tx_prev.load_state(bwd, self.stage.plan.inputs)

    @property
    def index(self) -> int:
        return self.stage.plan.index

    # -- links ----------------------------------------------------------------------------

    def _keys(self, feeds: Feeds, config: CompressionConfig) -> Array | None:
        return feeds.get(config.reference_key) if config.reference == "key" else None

    def _recv(self, link: Channel, expect: tuple[Any, ...], keys: Array | None = None) -> dict[str, Array]:
        called = self.clock()
        data = link.recv(self.timeout)
        arrived = self.clock()
        tag, raw = decode(data, densify=False)
        tensors: dict[str, Array] = {}
        for name, t in raw.items():
            if isinstance(t, TopkRows) and expect[0] == "fwd":
                self._masks.setdefault(int(expect[2]), {})[name] = t.cols
            if isinstance(t, TopkRows) and t.referenced:
                tensors[name] = self.rx_prev.receive(name, t, keys)
            elif isinstance(t, MaskedRows):
                cols = self._kept.get(int(expect[2]), {}).get(name) if expect[0] == "bwd" else None
                if cols is None:
                    raise RadError(f"stage {self.index}: masked gradient {name!r} in message {tuple(tag)} "
                                   "for a tensor this stage did not send as top-k")
                tensors[name] = t.dense(cols)
            else:
                tensors[name] = t if isinstance(t, np.ndarray) else t.dense()
                if expect[0] == "fwd" and isinstance(t, (np.ndarray, Int8Rows)):  # warm-up: the reference too
                    self.rx_prev.observe(name, tensors[name], keys)
        if tuple(tag[:len(expect)]) != expect:
            raise RadError(f"stage {self.index}: expected message {expect} on {link.name}, got {tag}")
        n = len(expect)
        if len(tag) > n:
            self._reported["next" if link is self.next else "prev"] = float(tag[n])
        if len(tag) > n + 2:
            from_next = link is self.next
            (self.meter_next if from_next else self.meter_prev).observe(
                len(data), float(tag[n + 1]), arrived, waited=arrived - called >= WAITED_S)
            if tag[n + 2] is not None:  # the neighbour's estimate of the rate of what this stage sends it
                if from_next:
                    self.tx_next.bandwidth_bps = float(tag[n + 2])
                    self.stats.rate_next_bps.append(float(tag[n + 2]))
                else:
                    self.tx_prev.bandwidth_bps = float(tag[n + 2])
        return tensors

    def _tag(self, kind: str, step: int, mb: int) -> tuple[Any, ...]:
        """Message tag; it carries the pipeline period as this stage knows it, the send time, and
        this stage's estimate of the rate the receiver's messages arrive at."""
        meter = self.meter_next if kind == "fwd" else self.meter_prev
        return (kind, step, mb, self._period_towards(kind), self.clock(), meter.rate_bps)

    def probe_next(self, nbytes: int = PROBE_BYTES) -> float:
        """Measure the bandwidth to the next stage (bits/s) from small and large round trips,
        and tell the next stage the result (it compresses the reverse direction). Each size is
        timed PROBE_ROUNDS times and the fastest kept: a round trip delayed by the scheduler
        (two processes on a shared core) would otherwise shrink or inflate the difference.
        Where ``nbytes`` crosses in well under PROBE_TARGET_S, the large size is probed again
        at about PROBE_TARGET_S (at most PROBE_MAX_BYTES)."""
        assert self.next is not None
        best = self._probe_rounds({1: float("inf"), nbytes: float("inf")})
        bw = (nbytes - 1) * 8 / max(best[nbytes] - best[1], 1e-6)
        # a fast link: again with a probe that takes about PROBE_TARGET_S, so TCP's start-up
        # is a few percent of it (the receiver acks probes until the result, whatever their size)
        large = min(PROBE_MAX_BYTES, int(bw * PROBE_TARGET_S / 8))
        if large >= 2 * nbytes:
            best = self._probe_rounds({1: best[1], large: float("inf")})
            nbytes = large
            bw = (nbytes - 1) * 8 / max(best[nbytes] - best[1], 1e-6)
        # the small round trip is the delay twice plus the small probe's and its ack's
        # serialisation (the same rate both ways assumed): without taking that out, a slow link's
        # delay read ~2 ms high at 0.2 Mbit/s, more than a dense message takes once the link is
        # fast, and the meter then put every such message at its floor time (rate read 30x high)
        small = len(encode(("probe", 1), {"p": np.zeros(1, np.uint8)})) + len(encode(("probe-ack", 1), {}))
        delay = max(0.0, (best[1] - small * 8 / bw) / 2)
        self.meter_next.delay_s = delay
        self.next.send(encode(("probe-result", bw, delay), {}))
        self.tx_next.bandwidth_bps = self.stats.bandwidth_next_bps = bw
        return bw

    def _probe_rounds(self, best: dict[int, float]) -> dict[int, float]:
        """PROBE_ROUNDS round trips of each size in ``best``, each size's fastest kept."""
        assert self.next is not None
        for _ in range(PROBE_ROUNDS):
            for size in best:
                start = self.timer()
                self.next.send(encode(("probe", size), {"p": np.zeros(size, np.uint8)}))
                self._recv(self.next, ("probe-ack", size))
                best[size] = min(best[size], self.timer() - start)
        return best

    def answer_prev(self) -> float:
        assert self.prev is not None
        for _ in range(4 * PROBE_ROUNDS + 1):  # the small and large probes, then the result
            tag, _ = decode(self.prev.recv(self.timeout))
            if tag[0] != "probe":
                break
            self.prev.send(encode(("probe-ack", tag[1]), {}))
        if tag[0] != "probe-result":
            raise RadError(f"stage {self.index}: expected a probe or the probe result from the previous stage, "
                           f"got {tag}")
        self.tx_prev.bandwidth_bps = float(tag[1])
        self.meter_prev.delay_s = float(tag[2])
        return float(tag[1])

    def probe(self) -> None:
        """Both probes of this stage, in the order that cannot deadlock along a chain, then the
        chain's barrier: the last stage says ``probed`` once its link was measured and each
        stage passes it back only after its own probe, so no stage starts training (computing,
        and sending on its links) while a later link is still being probed. Without it the
        first stage trained during the other links' probes, and on Mininet, where the frames of
        every link cross the user-space site switches, a probe then measured CPU contention as
        well as the link."""
        if self.prev is not None:
            self.answer_prev()
        if self.next is not None:
            self.probe_next()
            tag, _ = decode(self.next.recv(self.timeout))
            if tuple(tag) != ("probed",):
                raise RadError(f"stage {self.index}: expected the next stage's probed barrier, got {tag}")
        if self.prev is not None:
            self.prev.send(encode(("probed",), {}))

    # -- one step -------------------------------------------------------------------------

    def _budget(self, measured: float) -> float:
        """Seconds a message may take: the pipeline's period, i.e. the largest compute time per
        microbatch of any stage (own EMA and what neighbours reported), or 3x this forward's
        time before anything was measured. A link whose messages cross within the period does
        not slow the pipeline's steady state."""
        own = self._mb_compute if self._mb_compute is not None else 3 * measured
        return max(own, self.period_s)

    def step(self, step: int, microbatches: Sequence[Feeds]) -> float | None:
        """One training step; the mean loss on the last stage, None elsewhere."""
        m = len(microbatches)
        losses = []
        fwd_times = []
        for mb, feeds in enumerate(microbatches):
            received = self._recv(self.prev, ("fwd", step, mb), self._keys(feeds, self.rx_prev.config)) \
                if self.prev is not None else {}
            start = self.timer()
            out = self.stage.forward(mb, received, feeds)
            fwd_times.append(self.timer() - start)
            if self.next is not None:
                kept: dict[str, Array] = {}
                sent = self.tx_next.compress(out, self._budget(fwd_times[-1]), step, kept=kept,
                                             keys=self._keys(feeds, self.tx_next.config))
                self._kept[mb] = kept
                self.stats.ratios_next.append(self.tx_next.last_ratio)
                _count(self.stats.codecs_next, self.tx_next.last_codecs)
                data = encode(self._tag("fwd", step, mb), sent)
                self.stats.bytes_next += len(data)
                self.stats.sizes_next.append(len(data))
                self.next.send(data)
            else:
                losses.append(float(out[self.stage.graph.loss]))
        for mb in reversed(range(m)):
            grads_out = self._recv(self.next, ("bwd", step, mb)) if self.next is not None else {}
            self._kept.pop(mb, None)
            start = self.timer()
            grads_in = self.stage.backward(mb, grads_out, loss_scale=1.0 / m)
            elapsed = fwd_times[mb] + self.timer() - start
            self.stats.compute_s += elapsed
            self.stats.microbatches += 1
            self._mb_compute = elapsed if self._mb_compute is None else 0.8 * self._mb_compute + 0.2 * elapsed
            if self.prev is not None:
                sent = self.tx_prev.compress(grads_in, self._budget(elapsed), step, masks=self._masks.pop(mb, None))
                self.stats.ratios_prev.append(self.tx_prev.last_ratio)
                _count(self.stats.codecs_prev, self.tx_prev.last_codecs)
                data = encode(self._tag("bwd", step, mb), sent)
                self.stats.bytes_prev += len(data)
                self.prev.send(data)
        grads = self.stage.take_grads()
        if self.reducer is not None:
            start = self.timer()
            grads = self.reducer(grads)
            self.stats.reduce_s += self.timer() - start
        self.opt.step(self.stage.params, grads)
        return float(np.mean(losses)) if losses else None

    def evaluate(self, tag: int, feeds: Feeds) -> Array | None:
        """Forward only (a measurement, not training): uncompressed, except that a link sending
        per-row top-k activations applies it here too (it is part of the model trained through
        it; ``LinkCompressor.infer``). The last stage returns the input of the loss node (the
        logits), the others None."""
        received = self._recv(self.prev, ("eval", tag, 0)) if self.prev is not None else {}
        out = self.stage.forward(-1, received, feeds)
        ctx_values = self.stage.last_values
        self.stage.discard(-1)
        if self.next is not None:
            # stamped like training messages: an evaluation crossing the link delays the training
            # message queued behind it, and the receiver's meter must see it (measured: a 368 KB
            # evaluation on the 10 Mbit/s link read as 282 ms of serialisation for the next one)
            self.next.send(encode(("eval", tag, 0, self._period_towards("fwd"), self.clock(), None),
                                  self.tx_next.infer(out, self._keys(feeds, self.tx_next.config))))
            return None
        return ctx_values[self.stage.graph.node(self.stage.graph.loss).inputs[0]]


def merge_link_states(states: Iterable[Mapping[str, Array]]) -> dict[str, Array]:
    """The ``link_state`` of every stage of a plan as one mapping for the next plan's stages. A
    key that two stages hold with different values (a value that crossed two boundaries, e.g. a
    residual stream, has a residual per boundary) is ambiguous and left out: that state starts
    afresh rather than be given to the wrong link."""
    merged: dict[str, Array] = {}
    clash: set[str] = set()
    for state in states:
        for k, v in state.items():
            if k in merged and not np.array_equal(merged[k], v):
                clash.add(k)
            merged.setdefault(k, v)
    return {k: v for k, v in merged.items() if k not in clash}


def _count(counts: dict[str, int], codecs: Sequence[str]) -> None:
    for c in codecs:
        counts[c] = counts.get(c, 0) + 1


# -- in-process pipelines (unit tests, threads as sites) --------------------------------


@dataclass(frozen=True)
class PipelineResult:
    losses: tuple[float, ...]
    params: ParamStore
    stats: tuple[StageStats, ...]
    bytes_per_link: tuple[int, ...]
    """Bytes sent over each boundary link, both directions."""
    link_states: tuple[dict[str, Array], ...] = ()
    """Each stage's ``StageRunner.link_state`` at the end (what a re-plan carries)."""


def run_threads(graph: Graph, cuts: Sequence[int], params: ParamStore, steps: Iterable[Sequence[Feeds]],
                sgd: Sgd, shapes: Sequence[LinkShape | None] | None = None,
                compression: Sequence[CompressionConfig | None] | None = None,
                probe: bool = False, timeout: float = 30.0,
                compression_bwd: Sequence[CompressionConfig | None] | None = None,
                first_step: int = 0, link_state: Mapping[str, Array] | None = None) -> PipelineResult:
    """Train on ``steps`` (each a list of microbatch feeds) with one thread per stage and
    in-process links (optionally shaped); ``params`` is split between the stages and updated.
    ``compression[b]`` applies to both directions of boundary ``b`` unless ``compression_bwd``
    gives the backward (gradient) direction its own. ``first_step`` and ``link_state`` continue
    an earlier run (a re-plan): step numbers go on from it (warm-up is not repeated) and every
    stage takes up the compressor state (``StageRunner.restore_link_state``)."""
    plans: tuple[StagePlan, ...] = partition(graph, cuts)
    nb = len(plans) - 1
    shapes = list(shapes) if shapes is not None else [None] * nb
    compression = list(compression) if compression is not None else [None] * nb
    backward = list(compression_bwd) if compression_bwd is not None else compression
    links: list[tuple[Channel, Channel]] = []
    for b in range(nb):
        a, z = QueueChannel.pair(f"boundary {b}")
        shape = shapes[b]
        links.append((ShapedChannel(a, shape), ShapedChannel(z, shape)) if shape is not None else (a, z))
    runners = []
    for i, plan in enumerate(plans):
        stage_params = {n: params[n] for n in plan.nodes if n in params}
        runners.append(StageRunner(Stage(graph, plan, stage_params),
                                   links[i - 1][1] if i > 0 else None, links[i][0] if i < nb else None, sgd,
                                   compress_next=compression[i] if i < nb else None,
                                   compress_prev=backward[i - 1] if i > 0 else None, timeout=timeout,
                                   receive_prev=compression[i - 1] if i > 0 else None))
    if link_state is not None:
        for r in runners:
            r.restore_link_state(link_state)
    steps = list(steps)
    losses: list[float] = []
    errors: list[BaseException] = []

    def work(r: StageRunner) -> None:
        try:
            if probe:
                r.probe()
            for s, mbs in enumerate(steps):
                loss = r.step(first_step + s, mbs)
                if loss is not None:
                    losses.append(loss)
        except BaseException as error:  # reported by the caller
            errors.append(error)

    threads = [threading.Thread(target=work, args=(r,), name=f"stage {r.index}") for r in runners]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for end_a, end_b in links:
            end_a.close()
            end_b.close()
    if errors:
        raise errors[0]
    merged: ParamStore = {}
    for r in runners:
        merged.update(r.stage.params)
    return PipelineResult(tuple(losses), merged, tuple(r.stats for r in runners),
                          tuple(a.sent_bytes + z.sent_bytes for a, z in links), tuple(r.link_state() for r in runners))
