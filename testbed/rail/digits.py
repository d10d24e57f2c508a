"""A real model trained on a rail testbed: softmax regression on the digits, the rail switches
as the optimizer, one parameter shard per rail.

Every GPU (``x*y`` of them, global rank = topology rank) computes the gradient of its digits
minibatch at its current parameters (``innet.host.training.loop.minibatch`` over ``x*y`` workers),
quantizes it (fixed point for ``x*y`` contributions) and runs the hierarchical step with
push/pull: the HB domain reduce-scatters the integer gradients, rail switch ``g`` sums its
shard over the ``y`` domains and applies sgd/momentum to the parameters it holds, the HB
domain all-gathers the parameters. No optimizer state lives on the GPUs.

:func:`simulate` is the reference the run must equal bit for bit: the same minibatches and
quantization, each shard stepped by :class:`innet.wire.switch_model.SwitchModel` with the integers
the controller installed on that rail. :func:`float_accuracy` is float32 training on the
same gradients (the accuracy the fixed-point run should come close to).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from innet.wire import quantize as qz
from innet.host.training.model import Dataset, Mlp, Model, SoftmaxRegression, load_digits_dataset
from innet.host.training.loop import TrainConfig, float_training, initial_params, minibatch
from innet.wire import Mode
from innet.testbed.core.records import JsonRecord

I32 = npt.NDArray[np.int32]


@dataclass(frozen=True)
class DigitsConfig:
    """One digits training run on a rail testbed."""

    gpus: int
    """x*y: every GPU is a data-parallel worker."""
    mode: str = "momentum"
    """``sgd`` or ``momentum`` (the rail switches' optimizer)."""
    lr: float = 0.5
    beta: float = 0.9
    steps: int = 50
    batch_size: int = 16
    """Samples per GPU per step."""
    seed: int = 0
    param_frac_bits: int = 16
    grad_frac_bits: int = 20
    hidden: tuple[int, ...] = ()
    """Hidden layer widths: () is softmax regression (650 parameters), (1024, 1024) an MLP of
    1,126,410 parameters (``innet.host.training.model.Mlp``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))  # a JSON list too
        if self.mode not in ("sgd", "momentum"):
            raise ValueError(f"digits training mode {self.mode!r}: must be sgd or momentum")
        if self.steps < 1:
            raise ValueError(f"digits training steps {self.steps}: must be >= 1")

    @property
    def fixed(self) -> qz.FixedPointFormat:
        return qz.FixedPointFormat(self.param_frac_bits, self.grad_frac_bits, self.gpus)

    def train_config(self) -> TrainConfig:
        return TrainConfig(num_workers=self.gpus, mode=Mode[self.mode.upper()], lr=self.lr,
                           beta=self.beta if self.mode == "momentum" else 0.0, steps=self.steps,
                           batch_size=self.batch_size, seed=self.seed, fixed=self.fixed)

    def model(self) -> Model:
        return Mlp(self.hidden) if self.hidden else SoftmaxRegression()

    def param_chunks(self, k: int) -> int:
        """Chunks of ``k`` holding the model's parameters (the last one zero-padded)."""
        return math.ceil(self.model().size / k)

    def initial(self, k: int) -> I32:
        """The switches' initial int32 parameters, padded to whole chunks."""
        raw = initial_params(self.train_config(), self.model())
        out = np.zeros(self.param_chunks(k) * k, np.int32)
        out[:raw.size] = raw
        return out


def gradient(config: DigitsConfig, data: Dataset, rank: int, step: int, params: I32) -> tuple[float, I32]:
    """GPU ``rank``'s loss and quantized gradient at ``step`` for int32 ``params`` (padded)."""
    model = config.model()
    fmt = config.fixed
    loss, g = model.loss_and_gradient(fmt.params_float(params[:model.size]),
                                      *minibatch(data, config.train_config(), rank, step))
    out = np.zeros(params.size, np.int32)
    out[:model.size] = fmt.grads(g).values
    return float(loss), out


@dataclass(frozen=True)
class StepLoss(JsonRecord):
    """One GPU's training loss at one step, as ``rail_worker`` prints it (a JSON line)."""

    rank: int
    step: int
    loss: float
    time: float | None = None
    """Wall-clock time the GPU printed it (``time.time()``); None until printed."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepLoss:
        """The record again from a printed line."""
        time = data.get("time")
        return cls(int(data["rank"]), int(data["step"]), float(data["loss"]), None if time is None else float(time))


def worker_loop(config: DigitsConfig, rank: int, initial: I32, step_fn: Callable[[I32], I32],
                report: Callable[[StepLoss], None], start_step: int = 0, data: Dataset | None = None) -> I32:
    """One GPU's training from ``start_step`` (``initial``: the parameters before it):
    ``step_fn`` is the hierarchical push/pull; the final int32 parameters. ``data``: the
    loaded dataset (default: loaded here)."""
    data = data or load_digits_dataset(seed=config.seed)
    params = initial
    for s in range(start_step, config.steps):
        loss, g = gradient(config, data, rank, s, params)
        params = step_fn(g)
        report(StepLoss(rank, s, loss))
    return params


def simulate(config: DigitsConfig, initial: I32, bounds: Sequence[tuple[int, int]],
             rail_jobs: Sequence[Any]) -> I32:
    """The run as the rail switches compute it (module docstring); ``rail_jobs[g]`` carries
    the integers installed on rail ``g`` (``lr``, ``lr_shift``, ``beta``, ``beta_shift``)."""
    from innet.wire.switch_model import SwitchModel

    data = load_digits_dataset(seed=config.seed)
    mode = Mode[config.mode.upper()]
    models = [SwitchModel(mode, initial[a:b].copy(), j.lr, j.lr_shift, j.beta, j.beta_shift)
              for (a, b), j in zip(bounds, rail_jobs)]
    params = initial.copy()
    for s in range(config.steps):
        grads = [gradient(config, data, r, s, params)[1] for r in range(config.gpus)]
        for (a, b), model in zip(bounds, models):
            if b > a:
                model.step([g[a:b] for g in grads])
        params = np.concatenate([m.params for m in models]).astype(np.int32)
    return params


def accuracy(config: DigitsConfig, params: I32) -> float:
    """Test accuracy of int32 ``params`` (padded)."""
    model = config.model()
    data = load_digits_dataset(seed=config.seed)
    return model.accuracy(config.fixed.params_float(params[:model.size]), data.x_test, data.y_test)


def float_accuracy(config: DigitsConfig) -> float:
    """Test accuracy of float32 training with the same workers, minibatches and optimizer."""
    data = load_digits_dataset(seed=config.seed)
    return float_training(data, config.train_config(), config.model()).accuracy


def mean_losses(steps_of: Mapping[int, Sequence[StepLoss]], steps: int) -> list[float]:
    """Mean training loss per step over the GPUs' step lines (by rank)."""
    sums, counts = [0.0] * steps, [0] * steps
    for lines in steps_of.values():
        for line in lines:
            sums[line.step] += line.loss
            counts[line.step] += 1
    return [t / max(1, c) for t, c in zip(sums, counts)]
