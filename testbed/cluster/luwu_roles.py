"""LuWu on the swarm (``INNET_WORKLOAD=luwu``): optimizer nodes as a service of their own.

The star has ``N + S`` ports: ranks ``0..N-1`` are the ``worker`` tasks (torch trainers,
:func:`innet.testbed.luwu.train.run` in ``luwu`` mode), ranks ``N..N+S-1`` the ``node`` tasks
(:mod:`innet.host.luwu.node`, Adam on their shard), each rank from its task slot. Every task
derives the same :class:`~innet.host.luwu.plan.LuwuPlan` from the environment (the model, N, S,
K and the window are all it depends on) and reads only the epoch from the switch, once the
controller attached the job: nothing is shared but the overlay and the switch. The plan is the
one-job plan (pushes and pulls on one job): through a frame tunnel an agent is one sender per
switch port, so the Mininet star's duplex pull job does not apply; the numbers are the same.
Workers print ``INNET_RESULT`` with every step's loss and the final accuracy; nodes print theirs
too (``INNET_NODE_RESULT``), which the run's bit-exactness check reads beside the workers'.
Those result and status documents, and a member's transport (the JSON an agent's
transport is configured from), are wire messages and stay the dicts they are printed as.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from innet.testbed.ina.compose import ComposeConfig, ComposeError

NODE_RESULT_TAG = "INNET_NODE_RESULT"
AGENT_PORT = 18767


@dataclass(frozen=True)
class LuwuSettings:
    """The LuWu run every task of the stack agrees on (environment variables)."""

    nodes: int = 1
    """INNET_NODES: optimizer nodes S (the ``node`` service's replicas)."""
    steps: int = 20
    """INNET_TRAIN_STEPS: training steps."""
    lr: float = 0.003
    """INNET_LR: Adam's learning rate."""
    batch: int = 32
    """INNET_BATCH: samples per worker and step."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "LuwuSettings":
        env = os.environ if env is None else env
        try:
            settings = cls(nodes=int(env.get("INNET_NODES", "1")), steps=int(env.get("INNET_TRAIN_STEPS", "20")),
                           lr=float(env.get("INNET_LR", "0.003")), batch=int(env.get("INNET_BATCH", "32")))
        except ValueError:
            raise ComposeError(f"INNET_NODES={env.get('INNET_NODES')!r} / INNET_TRAIN_STEPS="
                               f"{env.get('INNET_TRAIN_STEPS')!r} / INNET_LR={env.get('INNET_LR')!r} / "
                               f"INNET_BATCH={env.get('INNET_BATCH')!r}: expected numbers") from None
        if not 1 <= settings.nodes <= 8 or settings.steps < 1 or settings.batch < 1 or settings.lr <= 0:
            raise ComposeError(f"LuWu settings {settings}: nodes within 1..8, steps, batch and lr positive")
        return settings


def star_config(base: ComposeConfig, settings: LuwuSettings) -> ComposeConfig:
    """The switch's configuration: one port per worker and per node."""
    return dataclasses.replace(base, workers=base.workers + settings.nodes, train_steps=0)


def train_spec(base: ComposeConfig, settings: LuwuSettings) -> Any:
    """The trainers' common :class:`~innet.testbed.luwu.train.TrainSpec` (rank, job, transport unset)."""
    from innet.testbed.luwu.train import TrainSpec

    return TrainSpec(mode="luwu", world=base.workers, steps=settings.steps, batch=settings.batch, lr=settings.lr,
                     k=base.k, window=base.window, job=base.job_id)


def plan(base: ComposeConfig, settings: LuwuSettings, epoch: int) -> Any:
    """The one-job LuWu plan of this stack at ``epoch`` (every task computes the same)."""
    from innet.host.luwu.model_in_network import layer_table
    from innet.host.luwu.plan import LuwuPlan
    from innet.testbed.luwu.train import build_model

    layers = layer_table(build_model(train_spec(base, settings)))
    return LuwuPlan(job=base.job_id, num_workers=base.workers, nodes=tuple(f"o{i + 1}" for i in range(settings.nodes)),
                    layer_sizes=tuple(layer.size for layer in layers), layer_names=tuple(layer.name for layer in layers),
                    epoch=epoch, window=base.window, k=base.k)


def transport(base: ComposeConfig, settings: LuwuSettings, member: int) -> Any:
    """The agent transport (``TunnelTransportConfig``) of star member ``member`` (worker rank,
    or N + node index) over the tunnel."""
    from innet import wire
    from innet.host.agent.transport import TunnelTransportConfig

    topo = star_config(base, settings).topology()
    host = sorted(topo.workers, key=lambda h: h.rank)[member]
    sw = topo.switch()
    return TunnelTransportConfig(tunnel=(socket.gethostbyname(base.switch_host), base.udp_port(member)),
                                 local=wire.Endpoint(host.mac, host.address, AGENT_PORT),
                                 switch=wire.Endpoint(sw.mac, sw.ip, wire.UDP_PORT),
                                 bind=("0.0.0.0", 0))  # the switch is on another machine: not loopback


def create_job(ctl: Any, base: ComposeConfig, settings: LuwuSettings) -> int:
    """The controller's part after pipeline and forwarding: the LuWu job over the N workers with
    the nodes as chunk owners, attached; its epoch."""
    from innet.controller.jobs import JobSpec, OwnerSpec, WorkerSpec

    topo = star_config(base, settings).topology()
    members = tuple(WorkerSpec(rank=h.rank, port=h.rank + 1, mac=h.mac, ip=h.address, udp_port=AGENT_PORT)
                    for h in sorted(topo.workers, key=lambda h: h.rank))
    the_plan = plan(base, settings, 1)
    owners = tuple(OwnerSpec(members[o.rank], o.first_chunk, o.chunks) for o in the_plan.owner_ranges())
    ctl.create_job(JobSpec(job_id=base.job_id, workers=members[:base.workers], slot_base=0, slot_count=base.window,
                           k=base.k, mode="sum", owners=owners))
    return int(ctl.attach(base.job_id))


def run_node(base: ComposeConfig, settings: LuwuSettings, index: int, epoch: int,
             superseded: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Optimizer node ``index`` for ``settings.steps`` steps; its status document. With
    ``superseded`` the node runs as a child process that is stopped as soon as
    ``superseded()`` says a new worker set was attached (checked every second): a node waiting
    for a killed worker's gradient would otherwise wait out its chunk deadline, past the new
    set's first pulls."""
    import subprocess
    import sys
    import time

    import numpy as np

    from innet.host.luwu.model_in_network import flat_parameters
    from innet.host.luwu.node import MODULE, NodeConfig, main as node_main, read_status
    from innet.host.luwu.ooc_adam import AdamConfig
    from innet.testbed.luwu.train import build_model

    # a directory per epoch: a node that runs again for a new worker set starts from the
    # initial parameters and fresh Adam moments, not from the state its old set left
    state = Path(os.environ.get("INNET_STATE_DIR", "/tmp")) / f"luwu-o{index + 1}-epoch{epoch}"
    state.mkdir(parents=True, exist_ok=True)
    init = state / "init.npy"
    np.save(init, flat_parameters(build_model(train_spec(base, settings))))
    config = NodeConfig(plan(base, settings, epoch), index, str(state), transport(base, settings, base.workers + index),
                        settings.steps, AdamConfig(lr=settings.lr), str(init))
    code: int | None = None
    if superseded is None:
        code = node_main([config.to_json()])
    else:
        child = subprocess.Popen([sys.executable, "-m", MODULE, config.to_json()])
        try:
            while (code := child.poll()) is None:
                if superseded():
                    child.kill()
                    child.wait(timeout=30)
                    return {"index": index, "exit": None, **read_status(state), "state": "superseded",
                            "error": f"a worker set after epoch {epoch} was attached"}
                time.sleep(1.0)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=30)
    doc = read_status(state)
    return {"index": index, "exit": code, **doc}


def run_worker(base: ComposeConfig, settings: LuwuSettings, rank: int, epoch: int,
               on_step: Callable[[int, float], None] = lambda step, loss: None) -> dict[str, Any]:
    """Rank ``rank``'s LuWu training, ``on_step(step, loss)`` after each step; the result
    document (every step's loss, the accuracy)."""
    from innet.testbed.cluster.timed import local_interface

    spec = dataclasses.replace(train_spec(base, settings), rank=rank, epoch=epoch,
                               transport=transport(base, settings, rank),
                               plan=plan(base, settings, epoch),
                               count_iface=local_interface(base.switch_host))
    return _trained(spec, settings, epoch, base.k, on_step)


def run_ddp_gloo_worker(base: ComposeConfig, settings: LuwuSettings, rank: int, store_host: str) -> dict[str, Any]:
    """Rank ``rank`` of DDP + gloo on LuWu's model, batches and steps (the baseline LuWu is
    timed against, ``INNET_WORKLOAD=ddp-gloo``); the result document, shaped as :func:`run_worker`'s.

    gloo's store is served by rank 0 (:func:`innet.testbed.luwu.train.run`), whose address no
    other task knows: rank 0 announces it on the controller's store (:data:`DDP_MASTER_KEY`)."""
    from datetime import timedelta

    import torch.distributed as dist

    from innet.testbed.cluster.timed import DONE_KEY, STORE_PORT, local_address, local_interface

    iface = local_interface(store_host)
    os.environ["GLOO_SOCKET_IFNAME"] = iface
    timeout = timedelta(seconds=base.deadline)
    store = dist.TCPStore(socket.gethostbyname(store_host), STORE_PORT, None, is_master=False, timeout=timeout)
    if rank == 0:
        store.set(DDP_MASTER_KEY, local_address(store_host))
    master = store.get(DDP_MASTER_KEY).decode()
    spec = dataclasses.replace(train_spec(base, settings), mode="ddp-gloo", rank=rank, master=(master, DDP_PORT),
                               count_iface=iface)
    try:
        return _trained(spec, settings, 0, 0)
    finally:
        store.add(DONE_KEY, 1)


DDP_MASTER_KEY = "innet_ddp_master"
"""Key of rank 0's overlay address on the controller's store (``ddp-gloo``)."""
DDP_PORT = 29501
"""TCP port of rank 0's gloo store (``ddp-gloo``)."""


def _trained(spec: Any, settings: LuwuSettings, epoch: int, k: int,
             on_step: Callable[[int, float], None] = lambda step, loss: None) -> dict[str, Any]:
    """Run ``spec``'s training; the result document with the trainer's final report."""
    from innet.testbed.luwu.train import run

    lines: list[dict[str, Any]] = []

    def emit(doc: dict[str, Any]) -> None:
        lines.append(doc)
        if "step" in doc:
            on_step(int(doc["step"]), float(doc["loss"]))

    code = run(spec, emit)
    final = next((d for d in lines if d.get("final")), {})
    losses = [d["loss"] for d in lines if "step" in d]
    return {"rank": spec.rank, "host": socket.gethostname(), "ok": code == 0 and len(losses) == settings.steps,
            "losses": losses, "accuracy": final.get("accuracy"), "step_seconds": final.get("step_seconds"),
            "epoch": epoch, "k": k, "seconds": round(sum(final.get("step_seconds") or [0.0]), 3),
            "final": final, "train": None}
