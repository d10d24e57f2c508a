"""One training worker process of the testbed (the switch is the optimizer, LuWu mode).

    python -m innet.testbed.ina.train_worker '<TrainPlan JSON>'

Runs in its Mininet host (or on loopback): each step computes the softmax-regression
gradient of its digits minibatch at its current parameters (``innet.host.training.loop``),
pushes it to its host agent and pulls the parameters the switch computed. Prints one JSON
line per step (``{"step": s, "loss": l}``) for progress bars, then
``{"final": [...int32 parameters...], "seconds": t}``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from innet.wire import quantize as qz
from innet.host.agent.agent import Agent, AgentConfig
from innet.host.training.model import SoftmaxRegression, load_digits_dataset
from innet.host.agent.aggregator import JobConfig, Timing
from innet.host.training.loop import TrainConfig, initial_params, minibatch
from innet.wire import Mode
from innet.host.agent.transport import TransportConfig
from innet.plans import JsonPlan, worker_main

WORKER_MODULE = __name__


@dataclass(frozen=True)
class TrainPlan(JsonPlan):
    """One worker's training run (JSON on its command line)."""

    job: int
    """Job id of the sgd/momentum job."""
    rank: int
    num_workers: int
    window: int
    k: int
    transport: TransportConfig | None
    """The agent's transport to the switch (in this plan's JSON as its ``json_form``); None in
    a plan whose runner passes the transport to :func:`train` itself."""
    epoch: int
    """The job epoch the worker set attached with (``Controller.attach``)."""
    mode: str = "momentum"
    """``sgd`` or ``momentum``."""
    lr: float = 0.5
    beta: float = 0.9
    steps: int = 200
    batch_size: int = 16
    seed: int = 0
    param_frac_bits: int = 16
    grad_frac_bits: int = 20
    chunk_deadline: float = 20.0

    def train_config(self) -> TrainConfig:
        return TrainConfig(num_workers=self.num_workers, mode=Mode[self.mode.upper()], lr=self.lr, beta=self.beta,
                           steps=self.steps, batch_size=self.batch_size, seed=self.seed,
                           fixed=qz.FixedPointFormat(self.param_frac_bits, self.grad_frac_bits, self.num_workers))



def train(plan: TrainPlan, transport: TransportConfig, on_step: Callable[[int, float], None] = lambda step, loss: None
          ) -> tuple[list[int], float]:
    """Run ``plan`` over ``transport`` (an agent transport config): the final int32 parameters the
    switch returned and the seconds the steps took. Shared by this process and the compose worker."""
    config = plan.train_config()
    model = SoftmaxRegression()
    data = load_digits_dataset(seed=plan.seed)
    agent_config = AgentConfig(JobConfig(job=plan.job, rank=plan.rank, num_workers=plan.num_workers,
                                         window=plan.window, k=plan.k, epoch=plan.epoch),
                               transport, mode=config.mode, fixed=config.fixed,
                               timing=Timing(chunk_deadline=plan.chunk_deadline))
    params = config.fixed.params_float(initial_params(config, model))
    raw = initial_params(config, model)
    with Agent(agent_config, capacity=model.size) as agent:
        start = time.perf_counter()
        for step in range(config.steps):
            loss, grad = model.loss_and_gradient(params, *minibatch(data, config, plan.rank, step))
            agent.push(grad)
            raw = agent.pull_int(timeout=120.0)
            params = config.fixed.params_float(raw)
            on_step(step, float(loss))
        seconds = time.perf_counter() - start
    return [int(v) for v in raw], seconds


def run(plan: TrainPlan) -> int:
    if plan.transport is None:
        print("innet.testbed.ina.train_worker: bad plan: TrainPlan.transport is null; a worker needs one",
              file=sys.stderr)
        return 2
    final, seconds = train(plan, plan.transport,
                           lambda step, loss: print(json.dumps({"step": step, "loss": loss}), flush=True))
    print(json.dumps({"final": final, "seconds": seconds}), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return worker_main(TrainPlan, run, argv, WORKER_MODULE)


if __name__ == "__main__":
    sys.exit(main())
