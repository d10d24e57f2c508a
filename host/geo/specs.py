"""What a geo stage or site process is told to build: the model, the task and the site's
data-parallel agent, as frozen records.

The coordinator writes them and the worker process reads them from its JSON plan
(:mod:`innet.plans`), so both sides agree on one typed shape instead of dict keys. Their
JSON is a ``kind`` and the record's fields (``{"kind": "mlp", "sizes": [...]}``): a record
says its kind with ``json_form()`` and the base class reads any kind back with
``from_json_form(data)``, so a job field typed :class:`ModelSpec` or :class:`TaskSpec`
takes every kind.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from innet.host.agent.transport import TransportConfig

_Spec = TypeVar("_Spec", bound="_KindSpec")


class _KindSpec:
    """A record whose JSON is its ``kind`` then its fields; fields that are None are left out
    (an optional key the reader defaults)."""

    kind: ClassVar[str]
    _kinds: ClassVar[dict[str, type[_KindSpec]]]
    _family: ClassVar[str]

    def json_form(self) -> dict[str, Any]:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        return {"kind": self.kind, **{k: v for k, v in fields.items() if v is not None}}

    @classmethod
    def from_json_form(cls: type[_Spec], data: Any) -> _Spec:
        """The record of JSON ``data`` (any kind of this family); ValueError naming what does not fit."""
        kind = data.get("kind") if isinstance(data, dict) else None
        sub = cls._kinds.get(kind) if isinstance(kind, str) else None
        if sub is None or not issubclass(sub, cls):
            raise ValueError(f"{cls._family} kind {kind!r}: expected one of {', '.join(map(repr, cls._kinds))}")
        rest = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k != "kind"}
        try:
            return sub(**rest)  # type: ignore[return-value]
        except TypeError as error:  # a missing or unknown field
            raise ValueError(f"{cls._family} {kind!r}: {error}") from None


class ModelSpec(_KindSpec):
    """The model a geo process builds (:func:`innet.host.geo.stage_process.build_model`)."""

    _family = "model"


@dataclass(frozen=True)
class MlpSpec(ModelSpec):
    """A multilayer perceptron of layer ``sizes`` (inputs first, classes last)."""

    kind: ClassVar[str] = "mlp"
    sizes: tuple[int, ...]


@dataclass(frozen=True)
class GptSpec(ModelSpec):
    """A small GPT: ``layers`` blocks of width ``d`` with ``heads`` heads over ``seq`` tokens."""

    kind: ClassVar[str] = "gpt"
    vocab: int
    d: int
    heads: int
    layers: int
    seq: int


@dataclass(frozen=True)
class Gpt2Spec(ModelSpec):
    """A GPT-2 shaped model of ``width`` (``layers`` None: the graph's default)."""

    kind: ClassVar[str] = "gpt2"
    vocab: int
    width: int
    seq: int
    layers: int | None = None


@dataclass(frozen=True)
class ResnetSpec(ModelSpec):
    """A small residual convolutional network of stage ``widths``."""

    kind: ClassVar[str] = "resnet"
    widths: tuple[int, ...] = (8, 16)


@dataclass(frozen=True)
class TorchSpec(ModelSpec):
    """A ``torch.nn.Module`` from ``factory`` (``pkg.mod:fn``) called with ``kwargs``, traced
    with torch.fx; ``numpy_nodes`` run as numpy operators instead of torch."""

    kind: ClassVar[str] = "torch"
    factory: str
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The factory's own keyword arguments (free-form: they belong to the user's module)."""
    seed: int = 0
    target: str = "y"
    numpy_nodes: tuple[str, ...] = ()


class TaskSpec(_KindSpec):
    """The data a geo process trains on (:func:`innet.host.geo.stage_process.build_task`)."""

    _family = "task"


@dataclass(frozen=True)
class DigitsSpec(TaskSpec):
    """The 8x8 handwritten digits."""

    kind: ClassVar[str] = "digits"


@dataclass(frozen=True)
class LmSpec(TaskSpec):
    """A synthetic language-model task of ``vocab`` tokens in sequences of ``seq``."""

    kind: ClassVar[str] = "lm"
    vocab: int = 32
    seq: int = 16


@dataclass(frozen=True)
class TextSpec(TaskSpec):
    """Character-level language modelling of a bundled text in sequences of ``seq``."""

    kind: ClassVar[str] = "text"
    seq: int = 64


ModelSpec._kinds = {c.kind: c for c in (MlpSpec, GptSpec, Gpt2Spec, ResnetSpec, TorchSpec)}
TaskSpec._kinds = {c.kind: c for c in (DigitsSpec, LmSpec, TextSpec)}


@dataclass(frozen=True)
class DpAgentSpec:
    """The host agent of one replica of a stage at a site: the site switch's ``sum`` job, this
    replica's rank in the worker set attached at ``epoch``, and the gradient's ``elements``
    (``GeoTestbed.dp_agent`` writes it)."""

    job: int
    rank: int
    num_workers: int
    window: int
    k: int
    epoch: int
    chunk_deadline: float
    transport: TransportConfig
    elements: int


@dataclass(frozen=True)
class DpSpec:
    """Data parallel inside a site: the stage's gradients are summed over ``replicas`` by the
    site switch through ``agent``; ``sum_bound`` bounds one replica's gradient values (None:
    the stage's default). Plans read it by its fields; only its JSON leaves out an unset bound."""

    agent: DpAgentSpec
    replicas: int
    sum_bound: float | None = None

    def json_form(self) -> dict[str, Any]:
        form: dict[str, Any] = {"agent": self.agent, "replicas": self.replicas}
        if self.sum_bound is not None:  # absent unless set: the reader defaults it
            form["sum_bound"] = self.sum_bound
        return form


__all__ = ["DigitsSpec", "DpAgentSpec", "DpSpec", "Gpt2Spec", "GptSpec", "LmSpec", "MlpSpec", "ModelSpec",
           "ResnetSpec", "TaskSpec", "TextSpec", "TorchSpec"]
