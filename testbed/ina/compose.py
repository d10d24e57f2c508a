"""The roles of ``docker-compose.yml``: ``switch``, ``controller`` and ``worker`` containers.

    python -m innet.testbed.ina.compose switch|controller|worker

Every container of the compose testbed runs this module with its role; configuration comes
from the environment (:class:`ComposeConfig`), shared state from the results volume:

* ``switch``: ``innet-switch`` with switch port ``r+1`` as UDP ``0.0.0.0:BASE+r+1`` for each
  rank r (frame tunnels, like the loopback testbed); it ends by itself when every worker
  has written its result (or at the deadline), so ``docker compose up`` returns.
* ``controller``: waits for the switch's P4Runtime server, pushes ``innet.p4``, installs
  forwarding for the star topology, creates the ``sum`` job, attaches a worker set and
  writes ``job.json`` (job id, epoch, workers, K, window) to the volume, then exits 0.
* ``worker`` (replicated): claims the lowest free rank with an ``O_EXCL`` file in the
  volume, waits for ``job.json``, runs a host agent over the frame tunnel to its switch
  port and an exact integer allreduce (:func:`innet.testbed.core.ina_worker.exact_values`),
  then (``INNET_TRAIN_STEPS`` > 0) the demo training: softmax regression on the digits with
  the switch as the momentum optimizer (job ``INNET_JOB``+1, :mod:`innet.testbed.ina.train_worker`),
  and writes ``worker-<rank>.json``: ``ok`` plus the SHA-256 of the int32 sum, and the
  training's final parameters (SHA-256, bit-exact with the numpy model of the switch, accuracy).

Why frame tunnels over the compose network rather than veth pairs: containers of a compose
project share one bridge network with ordinary IP, so a UDP socket per switch port reaches
every worker without privileges (no NET_ADMIN, no interfaces to create or leak), and the
same addressing works across machines (see README, multi-machine note).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from innet.children import end_popen
from innet.testbed.ina.records import TrainReport, WorkerReport

ROLES = ("switch", "controller", "worker")
JOB_FILE = "job.json"
RANKS_DIR = "ranks"
EXIT_USAGE = 2
EXIT_ERROR = 1


class ComposeError(RuntimeError):
    """A compose role could not do its part (names the role, what and why)."""


def _env_int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = env.get(name, str(default))
    try:
        value = int(text)
    except ValueError:
        raise ComposeError(f"{name}={text!r}: expected an integer within {low}..{high}") from None
    if not low <= value <= high:
        raise ComposeError(f"{name}={value}: must be within {low}..{high}")
    return value


@dataclass(frozen=True)
class ComposeConfig:
    """What every role reads from its environment (the compose file sets the same values for all)."""

    workers: int = 2
    """INNET_WORKERS: worker replicas, hence switch ports and job ranks."""
    switch_host: str = "switch"
    """INNET_SWITCH_HOST: the switch service's name on the compose network."""
    grpc_port: int = 9559
    """INNET_GRPC_PORT: the switch's P4Runtime port."""
    udp_base: int = 9000
    """INNET_UDP_BASE: switch port p is UDP port ``udp_base + p``."""
    results: Path = Path("/results")
    """INNET_RESULTS: the shared results volume."""
    elements: int = 4096
    """INNET_ELEMENTS: int32 elements per worker in the allreduce."""
    window: int = 32
    """INNET_WINDOW: slots of the job."""
    job_id: int = 1
    """INNET_JOB: job id."""
    deadline: float = 300.0
    """INNET_DEADLINE: seconds any role waits for another before it gives up."""
    train_steps: int = 30
    """INNET_TRAIN_STEPS: steps of the demo training after the allreduce (0: none); its job is
    ``job_id + 1`` on the slots after the allreduce job's."""
    k: int = 64
    """INNET_K: values per packet of both jobs, and the pipeline's ``INNET_K`` (jobs and
    pipeline must agree); the tunnelled frames must fit the network's MTU."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "ComposeConfig":
        env = os.environ if env is None else env
        deadline_text = env.get("INNET_DEADLINE", "300")
        try:
            deadline = float(deadline_text)
        except ValueError:
            raise ComposeError(f"INNET_DEADLINE={deadline_text!r}: expected seconds") from None
        return cls(workers=_env_int(env, "INNET_WORKERS", 2, 2, 32),
                   switch_host=env.get("INNET_SWITCH_HOST", "switch"),
                   grpc_port=_env_int(env, "INNET_GRPC_PORT", 9559, 1, 65535),
                   udp_base=_env_int(env, "INNET_UDP_BASE", 9000, 1, 65535 - 33),
                   results=Path(env.get("INNET_RESULTS", "/results")),
                   elements=_env_int(env, "INNET_ELEMENTS", 4096, 1, 1 << 24),
                   window=_env_int(env, "INNET_WINDOW", 32, 1, 1024),
                   job_id=_env_int(env, "INNET_JOB", 1, 0, 254),
                   deadline=deadline,
                   train_steps=_env_int(env, "INNET_TRAIN_STEPS", 30, 0, 100000),
                   k=_env_int(env, "INNET_K", 64, 4, 2048))

    def __post_init__(self) -> None:
        from innet.wire import SUPPORTED_K

        if self.k not in SUPPORTED_K:
            raise ComposeError(f"INNET_K={self.k}: innet.p4 supports K in {', '.join(map(str, SUPPORTED_K))}")
        if self.train_steps and 2 * self.window > 1024:
            raise ComposeError(f"INNET_WINDOW={self.window}: with training (INNET_TRAIN_STEPS={self.train_steps}) "
                               "two jobs of that many slots must fit innet.p4's 1024 (at most 512)")

    @property
    def grpc_address(self) -> str:
        return f"{self.switch_host}:{self.grpc_port}"

    def udp_port(self, rank: int) -> int:
        """UDP port of the switch port of ``rank`` (switch port rank+1, as in ``star``)."""
        return self.udp_base + rank + 1

    def topology(self) -> Any:
        from innet.testbed.core.topology import star

        return star(workers=self.workers)


def pipeline_defines(config: ComposeConfig) -> dict[str, str | None]:
    """``-D`` defines of ``innet.p4`` for this configuration: K of its jobs."""
    return {"INNET_K": str(config.k)}


def switch_command(config: ComposeConfig) -> list[str]:
    """``innet-switch`` argv: one UDP port per rank, P4Runtime on every interface."""
    argv = [sys.executable, "-m", "innet.switch.cli.switch", "--no-p4", "--log-level", "warning",
            "--grpc-server-addr", f"0.0.0.0:{config.grpc_port}", "--device-id", "1"]
    for rank in range(config.workers):
        argv += ["-u", f"{rank + 1}@0.0.0.0:{config.udp_port(rank)}"]
    return argv


def result_path(config: ComposeConfig, rank: int) -> Path:
    return config.results / f"worker-{rank}.json"


def _write_atomic(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)


def _wait(what: str, ready: Callable[[], bool], deadline: float, poll: float = 0.2) -> None:
    end = time.monotonic() + deadline
    while not ready():
        if time.monotonic() > end:
            raise ComposeError(f"{what}: not ready within {deadline:g} s")
        time.sleep(poll)


# -- switch -----------------------------------------------------------------------------


def run_switch(config: ComposeConfig) -> int:
    """innet-switch until every worker has written its result (or the deadline)."""
    config.results.mkdir(parents=True, exist_ok=True)
    popen = subprocess.Popen(switch_command(config))
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    end = time.monotonic() + config.deadline
    try:
        while not stop["now"] and time.monotonic() < end:
            if popen.poll() is not None:
                raise ComposeError(f"switch: innet-switch exited with status {popen.returncode}")
            if all(result_path(config, r).exists() for r in range(config.workers)):
                print(f"switch: all {config.workers} workers reported; stopping", flush=True)
                return 0
            time.sleep(0.2)
        if not stop["now"]:
            raise ComposeError(f"switch: workers did not all report within {config.deadline:g} s")
        return 0
    finally:
        end_popen(popen)


# -- controller -------------------------------------------------------------------------


def train_plan(config: ComposeConfig, rank: int = 0, epoch: int = 0) -> Any:
    """The demo training's TrainPlan of ``rank`` (transport given separately: the frame tunnel)."""
    from innet.testbed.ina.train_worker import TrainPlan

    return TrainPlan(job=config.job_id + 1, rank=rank, num_workers=config.workers, window=config.window, k=config.k,
                     transport=None, epoch=epoch, steps=config.train_steps,
                     chunk_deadline=min(60.0, config.deadline))


def expected_training(config: ComposeConfig) -> Any:
    """The int32 parameters the switch must end the training with: the numpy model of the switch
    (``innet.host.training.loop.simulate_training``), bit for bit."""
    from innet.host.training.model import SoftmaxRegression, load_digits_dataset
    from innet.host.training.loop import simulate_training

    plan = train_plan(config)
    return simulate_training(load_digits_dataset(seed=plan.seed), plan.train_config(), SoftmaxRegression()).params_int


def connect_controller(config: ComposeConfig) -> Any:
    """A Controller (connect it with `with`) once the switch's gRPC server accepts connections (deadline)."""
    import grpc

    from innet.controller.controller import Controller
    from innet.controller.switch import SwitchEndpoint

    end = time.monotonic() + config.deadline
    while True:
        channel = grpc.insecure_channel(config.grpc_address)
        try:
            grpc.channel_ready_future(channel).result(timeout=2.0)
            break
        except grpc.FutureTimeoutError:
            if time.monotonic() > end:
                raise ComposeError(f"controller: switch {config.grpc_address} unreachable within "
                                   f"{config.deadline:g} s") from None
        finally:
            channel.close()
    return Controller([SwitchEndpoint("s1", config.grpc_address, 1, timeout=30.0, switch_impl="innet")])


def run_controller(config: ComposeConfig) -> int:
    """Pipeline, forwarding, job, attach; ``job.json`` for the workers."""
    from innet.controller.jobs import Forwarding, JobSpec, Route, WorkerSpec
    from innet.controller.pipeline import PipelineConfig
    from innet.testbed.core.testbed import P4_PROGRAM

    config.results.mkdir(parents=True, exist_ok=True)
    for stale in [config.results / JOB_FILE, *config.results.glob("worker-*.json")]:
        stale.unlink(missing_ok=True)
    ranks = config.results / RANKS_DIR
    ranks.mkdir(exist_ok=True)
    for claim in ranks.iterdir():
        claim.unlink()
    topo = config.topology()
    sw = topo.switch()
    workers = tuple(WorkerSpec(rank=h.rank, port=h.rank + 1, mac=h.mac, ip=h.address, udp_port=18767)
                    for h in topo.workers)
    with connect_controller(config) as ctl:
        ctl.push(PipelineConfig.load(P4_PROGRAM, pipeline_defines(config), switch_impl="innet"))
        routes = tuple(Route(f"{w.ip}/32", w.mac, w.port) for w in workers)
        ctl.install_forwarding({"s1": Forwarding(sw.mac, sw.ip, routes, tuple((w.ip, w.mac) for w in workers))})
        job = JobSpec(job_id=config.job_id, workers=workers, slot_base=0, slot_count=config.window, k=config.k,
                      mode="sum")
        ctl.create_job(job)
        epoch = ctl.attach(job.job_id)
        train = create_training_job(ctl, config, workers) if config.train_steps else None
    _write_atomic(config.results / JOB_FILE, {
        "job": job.job_id, "epoch": epoch, "workers": config.workers, "k": config.k, "window": config.window,
        "switch_mac": sw.mac, "switch_ip": sw.ip, "train": train,
        "hosts": [[h.mac, h.address] for h in sorted(topo.workers, key=lambda h: h.rank)]})
    print(f"controller: job {job.job_id} ready for {config.workers} workers at epoch {epoch}", flush=True)
    return 0


def create_training_job(ctl: Any, config: ComposeConfig, workers: tuple[Any, ...]) -> dict[str, int]:
    """The demo training's momentum job, its initial parameters loaded on the switch: its id and epoch."""
    import math

    from innet.controller.jobs import JobSpec
    from innet.host.training.model import SoftmaxRegression
    from innet.host.training.loop import initial_params

    plan, model = train_plan(config), SoftmaxRegression()
    job = JobSpec(job_id=plan.job, workers=workers, slot_base=config.window, slot_count=config.window, k=plan.k,
                  mode=plan.mode, lr=plan.lr, beta=plan.beta, grad_frac_bits=plan.grad_frac_bits,
                  param_frac_bits=plan.param_frac_bits, param_chunks=math.ceil(model.size / plan.k))
    ctl.create_job(job)
    epoch = ctl.attach(job.job_id)
    ctl.load_params(job, initial_params(plan.train_config(), model))
    return {"job": job.job_id, "epoch": int(epoch), "steps": config.train_steps}


# -- worker -----------------------------------------------------------------------------


def claim_rank(config: ComposeConfig) -> int:
    """The lowest rank nobody has claimed yet (an ``O_EXCL`` file per rank in the volume)."""
    ranks = config.results / RANKS_DIR
    ranks.mkdir(parents=True, exist_ok=True)
    for rank in range(config.workers):
        try:
            fd = os.open(ranks / str(rank), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            continue
        os.write(fd, socket.gethostname().encode())
        os.close(fd)
        return rank
    raise ComposeError(f"worker: all {config.workers} ranks are taken (more worker replicas than "
                       "INNET_WORKERS?)")


def expected_sum(num_workers: int, elements: int) -> Any:
    """The exact int32 (wrapping) sum every worker must get back."""
    import numpy as np

    from innet.testbed.core.ina_worker import exact_values

    total = np.sum([exact_values(r, elements, 0).astype(np.int64) for r in range(num_workers)], axis=0)
    return (((total + (1 << 31)) % (1 << 32)) - (1 << 31)).astype(np.int32)


def digest(values: Any) -> str:
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(values, dtype="<i4").tobytes()).hexdigest()


def run_worker(config: ComposeConfig) -> int:
    job_path = config.results / JOB_FILE
    _wait(f"worker: {job_path}", job_path.exists, config.deadline)
    rank = claim_rank(config)
    job = json.loads(job_path.read_text())
    report = work(config, job, rank)
    _write_atomic(result_path(config, rank), report.to_json())
    return 0 if report.good else EXIT_ERROR


def allreduce_and_train(config: ComposeConfig, job: dict[str, Any], rank: int,
                        on_step: Callable[[int, float], None] = lambda step, loss: None) -> dict[str, Any]:
    """:func:`work` as its result document: the JSON message a cluster worker prints after
    ``INNET_RESULT`` (:mod:`innet.testbed.cluster.roles`)."""
    return work(config, job, rank, on_step).to_json()


def work(config: ComposeConfig, job: dict[str, Any], rank: int,
         on_step: Callable[[int, float], None] = lambda step, loss: None) -> WorkerReport:
    """What a worker of ``job`` (the controller's JSON document) does: an exact int32 allreduce
    over the frame tunnel to its switch port, then the demo training (``on_step`` after each step)."""
    import numpy as np

    from innet import wire
    from innet.host.agent.agent import Agent, AgentConfig
    from innet.host.agent.aggregator import JobConfig, Timing
    from innet.host.agent.transport import TunnelTransportConfig
    from innet.testbed.core.ina_worker import exact_values

    mac, ip = job["hosts"][rank]
    switch_ip = socket.gethostbyname(config.switch_host)
    transport = TunnelTransportConfig(tunnel=(switch_ip, config.udp_port(rank)),
                                      local=wire.Endpoint(mac, ip, 18767),
                                      switch=wire.Endpoint(job["switch_mac"], job["switch_ip"], wire.UDP_PORT),
                                      bind=("0.0.0.0", 0))
    agent_config = AgentConfig(JobConfig(job=job["job"], rank=rank, num_workers=job["workers"],
                                         window=job["window"], k=job["k"], epoch=job["epoch"]),
                               transport, timing=Timing(chunk_deadline=min(60.0, config.deadline)))
    start = time.monotonic()
    with Agent(agent_config, capacity=config.elements) as agent:
        got = agent.allreduce_int(exact_values(rank, config.elements, 0))
    seconds = time.monotonic() - start
    expect = expected_sum(job["workers"], config.elements)
    ok = bool(np.array_equal(got, expect))
    print(f"worker rank {rank}: allreduce of {config.elements} int32 at K={job['k']} {'exact' if ok else 'WRONG'} "
          f"in {seconds:.3f} s", flush=True)
    train = train_demo(config, job["train"], rank, transport, on_step) if job.get("train") else None
    return WorkerReport(rank=rank, host=socket.gethostname(), elements=config.elements, k=job["k"], ok=ok,
                        sha256=digest(got), head=tuple(int(v) for v in got[:4]), seconds=round(seconds, 4),
                        epoch=job["epoch"], train=train)


def train_demo(config: ComposeConfig, job: dict[str, int], rank: int, transport: Any,
               on_step: Callable[[int, float], None] = lambda step, loss: None) -> TrainReport:
    """The demo training on the job the controller made for it: what the worker reports."""
    import numpy as np

    from innet.host.training.model import SoftmaxRegression, load_digits_dataset
    from innet.testbed.ina.train_worker import train

    plan = train_plan(config, rank, job["epoch"])
    final, seconds = train(plan, transport, on_step)
    got = np.asarray(final, dtype=np.int32)
    bit_exact = bool(np.array_equal(got, expected_training(config)))
    data = load_digits_dataset(seed=plan.seed)
    accuracy = SoftmaxRegression().accuracy(plan.train_config().fixed.params_float(got), data.x_test, data.y_test)
    print(f"worker rank {rank}: trained {plan.steps} steps in {seconds:.2f} s, test accuracy {accuracy:.3f}, "
          f"{'bit-exact with' if bit_exact else 'DIFFERENT from'} the switch's numpy model", flush=True)
    return TrainReport(steps=plan.steps, sha256=digest(got), bit_exact=bit_exact,
                       accuracy=round(float(accuracy), 4), seconds=round(seconds, 3))


RUNNERS: dict[str, Callable[[ComposeConfig], int]] = {
    "switch": run_switch, "controller": run_controller, "worker": run_worker}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0] not in ROLES:
        print(f"usage: python -m innet.testbed.ina.compose {{{'|'.join(ROLES)}}}", file=sys.stderr)
        return EXIT_USAGE
    try:
        config = ComposeConfig.from_env()
        return RUNNERS[args[0]](config)
    except Exception as error:  # the container's one line of why; compose shows it
        from innet.controller.errors import ControllerError
        from innet.host.agent.aggregator import AggregationError

        if not isinstance(error, (ComposeError, ControllerError, AggregationError, OSError)):
            raise
        print(f"innet compose {args[0]}: error: {error}", file=sys.stderr, flush=True)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
