"""What ``innet geo bench`` runs: the placements, compressors and settings, checked once.

A :class:`GeoBenchConfig` is a value: every other part of the benchmark (planning, running,
reporting) reads it and none changes it, so a bad setting is refused here, before any
process starts, with one line naming the setting and its value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from innet.host.geo.compress import CompressionConfig
from innet.host.geo.specs import (DigitsSpec, Gpt2Spec, GptSpec, LmSpec, MlpSpec, ModelSpec, ResnetSpec, TaskSpec,
                                  TextSpec, TorchSpec)
from innet.host.geo.straggler import StragglerConfig, StragglerError
from innet.testbed.core.topology import Topology
from innet.testbed.geo.topology import MININET_WAN_CEILING_MBPS, geo, unemulable_wan

PLACEMENTS = ("naive", "greedy", "search", "opfence", "uniform", "dp")
"""Pipeline placements (naive order, bandwidth-greedy, exhaustive search without clustering,
OP-Fence; ``uniform``: OP-Fence's plan made as if every site were equally fast, for runs with
``speeds``) and ``dp``: data parallel across sites, every site a full replica."""
COMPRESSIONS = ("none", "int8", "topk", "adatopk")
"""What the compressed links send: dense, int8 per row, top-k at ``topk_ratio``, or AdaTopK's
top-k at the ratio the link's measured bandwidth allows (floored at ``min_ratio``)."""
DEFAULT_RUNS = (("dp", "none"), ("dp", "int8"), ("dp", "topk"), ("naive", "none"), ("greedy", "none"),
                ("search", "none"), ("opfence", "none"), ("opfence", "int8"), ("opfence", "topk"),
                ("opfence", "adatopk"))
TASKS = ("digits", "lm", "text")
"""``digits`` (scikit-learn digits, 10 classes), ``lm`` (synthetic bigram language) and ``text``
(character-level language modelling on generated English-like sentences, ``data.TextTask``)."""
MODEL_TASKS = {"mlp": ("digits",), "resnet": ("digits",), "gpt": ("lm", "text"), "gpt2": ("lm", "text")}
"""The numpy models and the tasks whose feeds they take (images as ``x``/``y``, tokens as
``tokens``/``targets``)."""
DEFAULT_MODEL = {"digits": "mlp", "lm": "gpt", "text": "gpt"}
DEFAULT_TARGET_LOSS = {"lm": 1.0, "digits": 0.3, "text": 2.0}
"""Time-to-loss target (test cross-entropy, nats) when none is given: the language model's Bayes
loss is 0.83, dense reaches ~0.86 in 150 steps."""
REFERENCE = ("opfence", "adatopk")
"""The run whose speedup against every other run the benchmark reports."""


class GeoBenchError(ValueError):
    """Bad benchmark settings; names the setting and value."""


STOP_AHEAD = 3
"""Steps after the detected one at which a pipeline stops for a re-plan: no stage can have
started that step when the detection arrives (a stage finishing step d holds every other stage
within a step of it), so all of them stop at the same boundary."""


@dataclass(frozen=True)
class GeoBenchConfig:
    """What ``innet geo bench`` runs."""

    task: str = "digits"
    """One of ``TASKS``: ``digits``, ``lm`` (the synthetic bigram task) or ``text`` (generated text)."""
    model: str | None = None
    """The numpy model, one of ``MODEL_TASKS`` (``mlp`` of ``sizes``, ``resnet``, ``gpt`` of
    ``width``/``heads``/``layers``, ``gpt2``: GPT-2-shaped at ``width`` with 64-wide heads and its
    depth from the width); None: the task's own (``DEFAULT_MODEL``)."""
    sizes: tuple[int, ...] = (64, 128, 256, 32, 10)
    """MLP widths for ``digits``."""
    batch: int = 32
    """Samples per microbatch."""
    microbatches: int = 4
    dp_batch: int | None = None
    """Samples per microbatch on each data-parallel site; None: ``batch``. Data parallel steps on
    ``sites x dp_batch x microbatches`` samples, ``sites`` times the pipelines' batch at the same
    learning rate unless this is ``batch / sites`` (the 4-block GPT at lr 0.1 diverges on 96
    samples per step, in data parallel and in one process alike, and trains on 32)."""
    steps: int = 100
    lr: float = 0.05
    momentum: float = 0.9
    eval_every: int = 5
    target_accuracy: float = 0.9
    """Time-to-accuracy threshold (test set)."""
    topk_ratio: float = 0.28125
    """Fixed top-k ratio (per row: 9 of 32 elements on the language model; with int4 gradients
    8 of 32 ended 0.06 above 9 of 32 on average over 6 seeds, and 10 of 32 would leave less than
    2x fewer bytes than int8, docs/geo.md)."""
    min_ratio: float | None = None
    """AdaTopK's floor; None: ``topk_ratio``. On the language model's slow-link WAN 8 of 32
    columns (0.25) ended 0.046 above dense over seeds 0-2 (seed 0: +0.245) where 9 of 32 ended
    0.029 below, so by default AdaTopK keeps at least what fixed top-k keeps (docs/geo.md)."""
    adatopk_max_ratio: float | None = None
    """AdaTopK's cap (``CompressionConfig.max_ratio``); None: 1, dense where the dense message
    crosses within the pipeline's period, else as many columns as cross. With every column's
    gradient sent (int4) the model is no longer trained only through the kept columns, so more
    columns do not leave it: on the slow-link WAN's cut (``python -m innet.testbed.geo.seeds``,
    virtual-time links) AdaTopK at 31 of 32 ended +0.014 from dense over seeds 0-5, fixed top-k
    -0.039 (docs/geo.md)."""
    target_loss: float | None = None
    """Time-to-loss threshold (test cross-entropy), or None."""
    layers: int = 2
    """GPT blocks (``lm``)."""
    width: int = 32
    """GPT width (``lm``)."""
    heads: int = 2
    vocab: int = 32
    """Tokens of the synthetic language (``lm``)."""
    seq: int = 16
    """Tokens per sequence (``lm``)."""
    torch_model: str | None = None
    """Run a PyTorch model traced with torch.fx instead of the numpy one: ``mlp`` / ``gpt`` (the
    shipped ones with this config's sizes) or ``package.module:factory`` (called without arguments;
    returns an ``nn.Module`` whose forward gives the logits)."""
    numpy_stages: tuple[int, ...] = ()
    """With ``torch_model``: pipeline stages that run the numpy operators instead (heterogeneous software)."""
    row_topk: bool = True
    """AdaTopK / top-k on activations per row (token) rather than per tensor (the language-model
    stall, docs/geo.md)."""
    warmup_steps: int = 10
    """Top-k links send int8 per row for the first N steps (top-k from random weights can stall)."""
    activations: str = "topk"
    """How top-k runs send activations (``CompressionConfig.activations``): ``topk``, or ``int8-fit``
    (int8 per row where that fits top-k's bytes, else top-k)."""
    gradients: str = "int4"
    """How top-k runs send gradients (``CompressionConfig.gradients``): ``int4`` per row (every
    column, 4 bits and a bfloat16 scale per row), ``int8`` per row, ``topk`` at the ratio (these
    three with error feedback) or ``masked`` (only at the forward top-k's columns, no indices).
    int4: on the language model's slow-link WAN, over 6 seeds, test loss 0.039 below dense on
    average where masked ended 0.18 above (docs/geo.md, *Top-k that converges*)."""
    topk_values: str = "int8-bf16"
    """Top-k values as int8 with a bfloat16 (``int8-bf16``) or float32 (``int8``) scale per row,
    or ``fp32``."""
    reference: bool = True
    """Language model: sparsify each token's deviation from a reference row per token that both
    ends of a link keep (``CompressionConfig.reference="key"``)."""
    runs: tuple[tuple[str, str], ...] = DEFAULT_RUNS
    replicas: int = 1
    """Pipelines per site (> 1: data parallel inside each site through its innet switch)."""
    topology: Topology = field(default_factory=geo)
    testbed: str = "loopback"
    """``loopback`` (stages as local processes, WAN in the transport) or ``mininet`` (root:
    stages on the site hosts, switches per site, WAN veths; see innet.testbed.geo.mininet)."""
    wan_ceiling_mbps: float = MININET_WAN_CEILING_MBPS
    """Mininet: the highest WAN rate this machine carries; a WAN link configured above it is
    refused (it would run slower than configured)."""
    switch_impl: str = "innet"
    """The site switches: ``innet`` (innet-switch) or ``bmv2`` (simple_switch_grpc; Mininet only)."""
    speeds: tuple[tuple[str, float], ...] = ()
    """CPU share of one core per site (a cgroup quota on the site's processes; root): emulated
    heterogeneous devices. Sites not named are not limited. Each site's speed is then measured
    (innet.host.geo.speed) and OP-Fence plans with it."""
    straggler: tuple[str, int, float] | None = None
    """(site, step, share): tighten that site's quota to ``share`` when the last stage finishes
    ``step`` (a device that slows mid-run)."""
    straggler_threshold: float = 1.5
    """Online detection: a stage whose median compute over the last ``straggler_window`` steps
    exceeds this factor of its own first window's is reported as a straggler (site and step)."""
    straggler_window: int = 5
    rate_change: tuple[str, str, int, float] | None = None
    """(site, site, step, Mbit/s): set the WAN link between the two sites to that rate when the
    last stage finishes ``step`` (Mininet: tc on the link; AdaTopK's ratio should follow)."""
    replan: bool = False
    """With ``straggler``: re-plan once, when the slowdown is detected online (stop, plan with
    the measured speed, continue from the stages' parameters)."""
    probe_s: float = 0.6
    """Seconds each site's speed probe runs (several quota periods)."""
    seed: int = 0
    """Seed of the parameters' initialisation and of the data order, the same for every run;
    the task itself (``task_seed``) stays the same across seeds so their test losses compare."""
    task_seed: int = 0
    out_dir: Path = Path("results")
    timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise GeoBenchError(f"geo bench task {self.task!r}: expected one of {', '.join(TASKS)}")
        if self.model is not None:
            if self.model not in MODEL_TASKS:
                raise GeoBenchError(f"geo bench model {self.model!r}: expected one of {', '.join(MODEL_TASKS)}")
            if self.task not in MODEL_TASKS[self.model]:
                raise GeoBenchError(f"geo bench model {self.model!r} does not take task {self.task!r}'s feeds: "
                                    f"use it with {' or '.join(MODEL_TASKS[self.model])}")
            if self.torch_model is not None:
                raise GeoBenchError(f"geo bench model {self.model!r}: a numpy model, not with a torch model (--torch)")
        if self.task == "text" and self.seq < 2:
            raise GeoBenchError(f"geo bench task text: seq {self.seq} must be >= 2 (a character and its successor)")
        if self.numpy_model == "gpt2" and self.width >= 64 and self.width % 64:
            raise GeoBenchError(f"geo bench model gpt2: width {self.width} must be a multiple of 64 (or below it)")
        for placement, comp in self.runs:
            if placement not in PLACEMENTS or comp not in COMPRESSIONS:
                raise GeoBenchError(f"geo bench run {placement}/{comp}: placement must be one of "
                                    f"{', '.join(PLACEMENTS)} and compression one of {', '.join(COMPRESSIONS)}")
        if any(p == "dp" and c == "adatopk" for p, c in self.runs):
            raise GeoBenchError("geo bench run dp/adatopk: data parallel takes none, int8 or topk")
        if self.testbed not in ("loopback", "mininet"):
            raise GeoBenchError(f"geo bench testbed {self.testbed!r}: expected 'loopback' or 'mininet'")
        if not self.wan_ceiling_mbps > 0:
            raise GeoBenchError(f"geo bench: WAN ceiling {self.wan_ceiling_mbps:g} Mbit/s: must be > 0")
        if self.switch_impl not in ("innet", "bmv2"):
            raise GeoBenchError(f"geo bench switch_impl {self.switch_impl!r}: expected 'innet' or 'bmv2'")
        if self.switch_impl == "bmv2" and self.testbed != "mininet":
            raise GeoBenchError("geo bench --switch-impl bmv2: BMv2 has no UDP ports, so its site switches run in "
                                "Mininet: add --backend mininet (as root)")
        if self.seed < 0 or self.task_seed < 0:
            raise GeoBenchError(f"geo bench: seed {self.seed} and task seed {self.task_seed} must be >= 0")
        if self.replicas < 1 or self.steps < 1 or self.microbatches < 1 or self.batch < 1 or \
                (self.dp_batch is not None and self.dp_batch < 1):
            raise GeoBenchError("geo bench: replicas, steps, microbatches, batch and dp batch must be >= 1")
        from innet.host.geo.compress import CompressionError

        try:
            link_compression(self, "topk")
            if any(c == "adatopk" for _, c in self.runs):
                link_compression(self, "adatopk")
            StragglerConfig(self.straggler_threshold, self.straggler_window)
        except (CompressionError, StragglerError) as error:
            raise GeoBenchError(f"geo bench: {error}") from None
        if self.width % self.heads:
            raise GeoBenchError(f"geo bench: width {self.width} is not a multiple of heads {self.heads}")
        if min(self.layers, self.width, self.vocab, self.seq) < 1 or self.vocab < 2:
            raise GeoBenchError("geo bench: layers, width, seq must be >= 1 and vocab >= 2")
        if self.numpy_stages and self.torch_model is None:
            raise GeoBenchError("geo bench: numpy stages only apply to a torch model (--torch)")
        if self.torch_model is not None and any(p == "dp" for p, _ in self.runs):
            raise GeoBenchError("geo bench run dp/...: data parallel runs the numpy models only; drop it with --torch")
        self._check_speeds()
        if self.testbed == "mininet":
            problem = unemulable_wan(self.topology, self.wan_ceiling_mbps)
            if problem is not None:
                raise GeoBenchError(f"geo bench: {problem}")

    def _check_speeds(self) -> None:
        from innet.host.geo.speed import SpeedError, check_speeds
        from innet.testbed.geo.topology import sites_of

        sites = sites_of(self.topology)
        named = [s for s, _ in self.speeds] + ([self.straggler[0]] if self.straggler else [])
        values = [v for _, v in self.speeds] + ([self.straggler[2]] if self.straggler else [])
        try:
            for site, value in zip(named, values):
                check_speeds({site: value}, sites)
        except SpeedError as error:
            raise GeoBenchError(f"geo bench: {error}") from None
        low = [(s, v) for s, v in zip(named, values) if v < 0.001]
        if low:
            raise GeoBenchError(f"geo bench: CPU share {low[0][1]:g} of site {low[0][0]!r}: at least 0.001 of a CPU")
        if self.straggler is not None and not 0 <= self.straggler[1] < self.steps:
            raise GeoBenchError(f"geo bench: straggler step {self.straggler[1]}: must be within 0..{self.steps - 1}")
        room = 3 + 2 * self.straggler_window + STOP_AHEAD
        if self.replan and (self.straggler is None or self.straggler[1] + room >= self.steps - 1):
            raise GeoBenchError(f"geo bench --replan: needs --straggler SITE:STEP:SHARE with STEP + {room + 1} < --steps "
                                "(warm-up, two detection windows and the stop before the re-plan)")
        if self.rate_change is not None:
            a, b, at, mbps = self.rate_change
            if self.testbed != "mininet":
                raise GeoBenchError("geo bench --rate-change: changes a Mininet WAN link with tc: "
                                    "add --backend mininet (root)")
            if not 0 <= at < self.steps:
                raise GeoBenchError(f"geo bench: rate change step {at}: must be within 0..{self.steps - 1}")
            missing = [x for x in (a, b) if x not in sites]
            if missing:
                raise GeoBenchError(f"geo bench: rate change: no site {missing[0]!r} (sites: {', '.join(sites)})")
        if any(p == "uniform" for p, _ in self.runs) and not self.speeds:
            raise GeoBenchError("geo bench run uniform/...: the equal-speed plan only differs with --speeds")

    @property
    def numpy_model(self) -> str:
        """The numpy model that runs (``model`` or the task's own)."""
        return self.model if self.model is not None else DEFAULT_MODEL.get(self.task, "mlp")

    @property
    def token_vocab(self) -> int:
        """Tokens of a language task: ``vocab`` for ``lm``, the text's characters for ``text``."""
        if self.task == "text":
            from innet.host.geo.data import TextTask

            return TextTask.make(seq=self.seq, seed=self.task_seed).vocab
        return self.vocab

    def model_spec(self, numpy_nodes: Sequence[str] = ()) -> ModelSpec:
        """The model every stage builds; ``numpy_nodes`` of a torch model run as numpy operators."""
        vocab = self.token_vocab if self.task != "digits" else self.vocab
        gpt = GptSpec(vocab=vocab, d=self.width, heads=self.heads, layers=self.layers, seq=self.seq)
        if self.torch_model is not None:
            gpt_kwargs = {k: v for k, v in gpt.json_form().items() if k != "kind"}
            builtin = {"mlp": ("innet.host.geo.torch_models:mlp", {"sizes": list(self.sizes)}),
                       "gpt": ("innet.host.geo.torch_models:gpt", gpt_kwargs)}
            factory, kwargs = builtin.get(self.torch_model, (self.torch_model, {}))
            return TorchSpec(factory=factory, kwargs=kwargs, seed=self.seed,
                             target="y" if self.task == "digits" else "targets", numpy_nodes=tuple(numpy_nodes))
        model = self.numpy_model
        if model == "mlp":
            return MlpSpec(tuple(self.sizes))
        if model == "resnet":
            return ResnetSpec((8, 16))
        if model == "gpt2":
            return Gpt2Spec(vocab=vocab, width=self.width, seq=self.seq)
        return gpt

    def task_spec(self) -> TaskSpec:
        """The data every stage trains on."""
        if self.task == "text":
            return TextSpec(seq=self.seq)
        return DigitsSpec() if self.task == "digits" else LmSpec(vocab=self.vocab, seq=self.seq)


def link_compression(config: GeoBenchConfig, compression: str) -> CompressionConfig | None:
    """What a compressed link of run ``compression`` sends (None: dense)."""
    if compression == "none":
        return None
    if compression == "int8":
        return CompressionConfig("int8")
    return CompressionConfig(compression, ratio=config.topk_ratio, min_ratio=adatopk_min_ratio(config),
                             max_ratio=adatopk_max_ratio(config) if compression == "adatopk" else 1.0,
                             row_topk=config.row_topk, warmup_steps=config.warmup_steps, warmup="int8",
                             activations=config.activations, gradients=config.gradients,
                             values=config.topk_values,
                             reference="key" if config.reference and config.task == "lm" else "none",
                             reference_rate=0.9)


def adatopk_min_ratio(config: GeoBenchConfig) -> float:
    """AdaTopK's floor: the configured one, else the fixed top-k ratio."""
    return config.min_ratio if config.min_ratio is not None else config.topk_ratio


def adatopk_max_ratio(config: GeoBenchConfig) -> float:
    """AdaTopK's cap: the configured one, else 1 (dense where the dense message fits)."""
    return config.adatopk_max_ratio if config.adatopk_max_ratio is not None else 1.0


def target_loss(config: GeoBenchConfig) -> float:
    """The time-to-loss threshold: the configured one, else the task's default."""
    return config.target_loss if config.target_loss is not None else DEFAULT_TARGET_LOSS[config.task]


__all__ = ["COMPRESSIONS", "DEFAULT_RUNS", "DEFAULT_TARGET_LOSS", "GeoBenchConfig", "GeoBenchError", "PLACEMENTS",
           "REFERENCE", "STOP_AHEAD", "adatopk_max_ratio", "adatopk_min_ratio", "link_compression", "target_loss"]
