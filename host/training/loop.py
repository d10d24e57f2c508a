"""Data-parallel training with the switch as the optimizer (LuWu mode), and its references.

N emulated workers each hold a shard of the digits training set. Every step a worker
computes the gradient of its minibatch at its current parameters (numpy), pushes it to its
agent and pulls the parameters the switch computed (sgd or momentum on the switch's
int32 state). No optimizer state lives on the workers.

Two references run the same steps without a network:

- ``simulate_training``: the switch's fixed-point arithmetic (``innet.wire.switch_model``)
  with the same quantization; the switch run must end with the same int32 parameters,
  bit for bit;
- ``float_training``: float32 SGD/momentum on the averaged gradient; the switch run's
  test accuracy must be close (fixed point costs little).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import numpy.typing as npt

from innet.wire import quantize as qz
from innet.wire import switch_model as sim
from innet.host.agent.agent import Agent, AgentConfig
from innet.host.training.model import Dataset, Model, SoftmaxRegression
from innet.wire import Mode

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class TrainConfig:
    """One training run."""

    num_workers: int = 4
    mode: Mode = Mode.SGD
    """SGD or MOMENTUM (the switch's optimizer)."""
    lr: float = 0.5
    beta: float = 0.9
    """Momentum coefficient (MOMENTUM only)."""
    steps: int = 100
    batch_size: int = 16
    """Samples per worker per step."""
    seed: int = 0
    fixed: qz.FixedPointFormat = field(default_factory=lambda: qz.FixedPointFormat(16, 20, 4))
    """Fixed point of parameters and gradients (``num_workers`` must match)."""

    def __post_init__(self) -> None:
        if self.mode not in (Mode.SGD, Mode.MOMENTUM):
            raise ValueError(f"training mode {self.mode!r}: must be SGD or MOMENTUM")
        if self.fixed.num_workers != self.num_workers:
            raise ValueError(f"fixed point format is for {self.fixed.num_workers} workers, "
                             f"training uses {self.num_workers}")

    @property
    def optimizer(self) -> qz.OptimizerParams:
        """The switch's integer hyperparameters for this run."""
        beta = self.beta if self.mode == Mode.MOMENTUM else 0.0
        return qz.optimizer_params(self.lr, self.num_workers, self.fixed.grad_frac_bits,
                                   self.fixed.param_frac_bits, beta)


@dataclass(frozen=True)
class TrainResult:
    params: F32
    """Final parameters (float32)."""
    params_int: npt.NDArray[np.int32] | None
    """Final parameters as the switch's int32 (None for the float reference)."""
    accuracy: float
    """Test accuracy."""
    losses: tuple[float, ...]
    """Mean training loss per step (over workers)."""


def minibatch(data: Dataset, config: TrainConfig, rank: int, step: int
              ) -> tuple[F32, npt.NDArray[np.int64]]:
    """Worker ``rank``'s minibatch at ``step`` (deterministic)."""
    x, y = data.shard(rank, config.num_workers)
    rng = np.random.default_rng((config.seed, rank, step))
    idx = rng.integers(0, len(y), config.batch_size)
    return x[idx], y[idx]


def initial_params(config: TrainConfig, model: Model) -> npt.NDArray[np.int32]:
    """The switch's initial int32 parameters (the controller loads them)."""
    return config.fixed.params(model.init(config.seed)).values


def simulate_training(data: Dataset, config: TrainConfig,
                      model: SoftmaxRegression = SoftmaxRegression()) -> TrainResult:
    """The run as the switch computes it, in numpy (bit-exact reference)."""
    fmt, opt = config.fixed, config.optimizer
    switch = sim.SwitchModel(config.mode, initial_params(config, model), opt.lr, opt.lr_shift,
                             opt.beta, opt.beta_shift)
    params = fmt.params_float(switch.params)
    losses = []
    for step in range(config.steps):
        grads, step_loss = [], 0.0
        for rank in range(config.num_workers):
            loss, g = model.loss_and_gradient(params, *minibatch(data, config, rank, step))
            grads.append(fmt.grads(g).values)
            step_loss += loss
        params = fmt.params_float(switch.step(grads))
        losses.append(step_loss / config.num_workers)
    return TrainResult(params, switch.params.copy(), model.accuracy(params, data.x_test, data.y_test),
                       tuple(losses))


def float_training(data: Dataset, config: TrainConfig, model: Model = SoftmaxRegression()) -> TrainResult:
    """float32 SGD/momentum on the workers' averaged gradients (accuracy reference)."""
    params = model.init(config.seed).astype(np.float32)
    velocity = np.zeros_like(params)
    lr, beta = np.float32(config.lr), np.float32(config.beta)
    losses = []
    for step in range(config.steps):
        total = np.zeros_like(params)
        step_loss = 0.0
        for rank in range(config.num_workers):
            loss, g = model.loss_and_gradient(params, *minibatch(data, config, rank, step))
            total += g
            step_loss += loss
        mean = total / np.float32(config.num_workers)
        if config.mode == Mode.MOMENTUM:
            velocity = beta * velocity + mean
            params = params - lr * velocity
        else:
            params = params - lr * mean
        losses.append(step_loss / config.num_workers)
    return TrainResult(params, None, model.accuracy(params, data.x_test, data.y_test), tuple(losses))


def train_workers(data: Dataset, config: TrainConfig, agent_configs: Sequence[AgentConfig],
                  model: SoftmaxRegression = SoftmaxRegression(), pull_timeout: float = 120.0
                  ) -> TrainResult:
    """Run the N workers (threads, each with its agent process) against a switch whose job
    holds ``initial_params``; the final parameters of worker 0 (all workers agree)."""
    if len(agent_configs) != config.num_workers:
        raise ValueError(f"{len(agent_configs)} agent configs for {config.num_workers} workers")
    start = config.fixed.params_float(initial_params(config, model))
    finals: list[npt.NDArray[np.int32] | None] = [None] * config.num_workers
    losses = np.zeros((config.num_workers, config.steps))
    errors: list[BaseException] = []
    agents = [Agent(c, capacity=model.size) for c in agent_configs]

    def worker(rank: int) -> None:
        agent, params = agents[rank], start.copy()
        try:
            for step in range(config.steps):
                loss, g = model.loss_and_gradient(params, *minibatch(data, config, rank, step))
                losses[rank, step] = loss
                agent.push(g)
                raw = agent.pull_int(timeout=pull_timeout)
                params = config.fixed.params_float(raw)
            finals[rank] = raw if config.steps else initial_params(config, model)
        except BaseException as error:  # reported after all threads ended
            errors.append(error)

    try:
        for agent in agents:
            agent.start()
        threads = [threading.Thread(target=worker, args=(r,), name=f"worker-{r}")
                   for r in range(config.num_workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for agent in agents:
            agent.close()
    if errors:
        raise errors[0]
    final = finals[0]
    assert final is not None
    for rank, other in enumerate(finals):
        if other is None or not np.array_equal(other, final):
            raise RuntimeError(f"worker {rank} ended with different parameters than worker 0")
    params = config.fixed.params_float(final)
    return TrainResult(params, final, model.accuracy(params, data.x_test, data.y_test),
                       tuple(losses.mean(axis=0)))
