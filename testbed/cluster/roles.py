"""The roles of ``docker-stack.yml``: ``switch``, ``controller`` and ``worker`` tasks of a Swarm stack.

    python -m innet.testbed.cluster.roles switch|controller|worker

The compose roles (:mod:`innet.testbed.ina.compose`) share a volume for rank claims and
``job.json``; tasks of a stack run on different machines, so here nothing is shared but
the overlay network and the switch itself:

* ``switch``: ``innet-switch`` (replaced by ``exec``, so Swarm's stop signal reaches it)
  with one UDP port per rank and P4Runtime over TLS (mutual: the keys are Swarm secrets
  in ``/run/secrets``); it runs until the stack is removed.
* ``controller`` (one-shot: exit 0 completes its only task): pushes ``innet.p4``, installs the star's forwarding,
  creates the demo training's momentum job with its initial parameters and the ``sum``
  job with K from the overlay's MTU, attaches both, prints one ``INNET_JOB`` line, exits 0
  (with ``INNET_REJOIN=on`` it first serves :func:`serve_rejoin` until every slot finished).
* ``worker`` (replicated): its rank is its task slot minus one (``INNET_SLOT`` =
  ``{{.Task.Slot}}``), so a rescheduled task keeps its rank. It reads both jobs from the
  switch in a read-only P4Runtime session (no arbitration: it never competes with the
  controller) until the ``sum`` job is attached, then allreduces exactly over the frame
  tunnel, trains, and prints one ``INNET_RESULT`` JSON line that ``innet cluster status``
  collects from the service's logs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from innet.testbed.ina.compose import ComposeConfig, ComposeError

WORKLOADS = ("demo", "luwu", "ddp", "ddp-gloo")
JOB_TAG = "INNET_JOB"
RESULT_TAG = "INNET_RESULT"
REJOIN_TAG = "INNET_REJOIN"
HELD_TAG = "INNET_HELD"
REPUSH_TAG = "INNET_REPUSH"
REJOIN_PORT = 18790
"""TCP port (on the overlay only) where a rejoin controller hears worker tasks start and finish."""
EXIT_USAGE = 2
EXIT_ERROR = 1
TUNNEL_OVERHEAD = 14 + 20 + 8
"""Bytes the frame tunnel adds around an innet IP packet: the inner Ethernet header and the
outer IPv4 + UDP headers of the tunnel datagram."""
SECRETS = ("innet_ca", "innet_switch_crt", "innet_switch_key", "innet_client_crt", "innet_client_key")
"""Swarm secret names (files in ``INNET_TLS_DIR``): CA, switch and client certificates and keys."""


def k_for_overlay(mtu: int) -> int:
    """K of the ``sum`` job whose tunnelled frames fit the overlay network's MTU (1450 on
    VXLAN over a 1500-byte underlay: K=256; over MTU 9000: K=2048)."""
    from innet.wire import k_for_mtu

    return k_for_mtu(mtu - TUNNEL_OVERHEAD)


@dataclass(frozen=True)
class ClusterRoleConfig:
    """What every task reads from its environment (the stack file sets it)."""

    base: ComposeConfig
    """Workers, switch host, ports, elements, window, job id, deadline, training steps."""
    overlay_mtu: int = 1450
    """INNET_OVERLAY_MTU: MTU of the stack's overlay network (VXLAN: underlay MTU - 50)."""
    tls_dir: Path | None = Path("/run/secrets")
    """INNET_TLS_DIR: where the Swarm secrets are; INNET_TLS=off: plaintext P4Runtime."""
    slot: int = 0
    """INNET_SLOT: the worker task's slot (1-based), 0 for other roles."""
    repeats: int = 0
    """INNET_REPEATS: timed allreduces a worker runs instead of the allreduce and training
    (:mod:`innet.testbed.cluster.timed`, ``innet bench cluster``); 0: the exact run."""
    collective: str = "ina"
    """INNET_COLLECTIVE: ``ina`` (through the switch) or ``gloo`` (torch's ring among the
    workers, the controller serving the rendezvous store; needs the torch image and repeats)."""
    workload: str = "demo"
    """INNET_WORKLOAD: ``demo`` (exact allreduce, then the demo training) or ``luwu`` (LuWu
    training with the ``node`` service's optimizer nodes: :mod:`innet.testbed.cluster.luwu_roles`)
    or ``ddp`` (PyTorch DDP launched by torchrun in the worker tasks, gradients through the
    switch by ``register_innet_hook``: :mod:`innet.testbed.cluster.ddp`) or ``ddp-gloo`` (DDP
    + gloo on LuWu's model and steps, timed: the baseline ``innet bench cluster`` holds LuWu
    against; the controller serves the store)."""
    rejoin: bool = False
    """INNET_REJOIN=on: the controller stays up; a worker slot that starts a second time (its
    task replaced) makes it attach a new epoch of both jobs with the training restarted, and
    every worker runs again at that epoch (what the Mininet restart path does)."""
    hold: tuple[int, int] | None = None
    """INNET_HOLD=slot:step: the first task of that slot stops after that training step until killed."""
    luwu: Any = None
    """The LuWu settings (:class:`~innet.testbed.cluster.luwu_roles.LuwuSettings`) of a ``luwu``
    workload (and the steps, batch and lr of a ``ddp-gloo`` one)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "ClusterRoleConfig":
        env = os.environ if env is None else env
        try:
            mtu = int(env.get("INNET_OVERLAY_MTU", "1450"))
            slot = int(env.get("INNET_SLOT", "0") or 0)
            repeats = int(env.get("INNET_REPEATS", "0") or 0)
        except ValueError:
            raise ComposeError(f"INNET_OVERLAY_MTU={env.get('INNET_OVERLAY_MTU')!r} / INNET_SLOT="
                               f"{env.get('INNET_SLOT')!r} / INNET_REPEATS={env.get('INNET_REPEATS')!r}: "
                               "expected integers") from None
        tls = None if env.get("INNET_TLS", "on") == "off" else Path(env.get("INNET_TLS_DIR", "/run/secrets"))
        collective = env.get("INNET_COLLECTIVE", "ina") or "ina"
        if collective not in ("ina", "gloo") or (collective == "gloo" and repeats < 1):
            raise ComposeError(f"INNET_COLLECTIVE={collective!r}: ina, or gloo with INNET_REPEATS >= 1")
        workload = env.get("INNET_WORKLOAD", "demo") or "demo"
        if workload not in WORKLOADS:
            raise ComposeError(f"INNET_WORKLOAD={workload!r}: one of {', '.join(WORKLOADS)}")
        base = ComposeConfig.from_env(env)
        if "INNET_K" not in env:
            base = dataclasses.replace(base, k=k_for_overlay(mtu))
        luwu = None
        if workload in ("luwu", "ddp-gloo"):  # ddp-gloo: LuWu's steps, batch and lr
            from innet.testbed.cluster.luwu_roles import LuwuSettings

            luwu = LuwuSettings.from_env(env)
        rejoin = env.get("INNET_REJOIN", "off") == "on"
        hold_text = env.get("INNET_HOLD", "") or ""
        hold = None
        if hold_text:
            try:
                hold_slot, hold_step = (int(v) for v in hold_text.split(":"))
            except ValueError:
                raise ComposeError(f"INNET_HOLD={hold_text!r}: expected slot:step") from None
            hold = (hold_slot, hold_step)
        return cls(base, mtu, tls, slot, max(repeats, 0), collective, workload, rejoin, hold, luwu)

    def secret(self, name: str) -> Path:
        assert self.tls_dir is not None
        return self.tls_dir / name

    def client_tls(self) -> Any:
        from innet.controller.tls import ClientTls

        if self.tls_dir is None:
            return None
        return ClientTls(ca_cert=self.secret("innet_ca"), cert=self.secret("innet_client_crt"),
                         key=self.secret("innet_client_key"), server_name="switch")


def switch_argv(config: ClusterRoleConfig) -> list[str]:
    """``innet-switch`` argv of the compose switch plus mutual TLS on P4Runtime."""
    from innet.testbed.ina.compose import switch_command

    argv = switch_command(_ports(config))
    if config.tls_dir is not None:
        argv += ["--grpc-server-ssl", "--grpc-server-cert", str(config.secret("innet_switch_crt")),
                 "--grpc-server-key", str(config.secret("innet_switch_key")),
                 "--grpc-server-cacert", str(config.secret("innet_ca")), "--grpc-server-with-client-auth"]
    return argv


def _ports(config: ClusterRoleConfig) -> ComposeConfig:
    """The star the switch serves: a port per worker, and per LuWu node."""
    if config.workload != "luwu":
        return config.base
    from innet.testbed.cluster.luwu_roles import star_config

    return star_config(config.base, config.luwu)


def run_switch(config: ClusterRoleConfig) -> int:
    argv = switch_argv(config)
    os.execv(argv[0], argv)
    return EXIT_ERROR  # not reached


def wait_tcp(address: tuple[str, int], deadline: float, what: str) -> None:
    """Until ``address`` accepts TCP (its name resolves once the task is on the overlay)."""
    end = time.monotonic() + deadline
    while True:
        try:
            with socket.create_connection(address, timeout=2.0):
                return
        except OSError as error:
            if time.monotonic() > end:
                raise ComposeError(f"{what}: {address[0]}:{address[1]} unreachable within {deadline:g} s "
                                   f"({error})") from None
            time.sleep(0.5)


def _session(config: ClusterRoleConfig, election_id: int | None) -> Any:
    """A Controller on the switch service (connect it with ``with``)."""
    from innet.controller.controller import Controller
    from innet.controller.switch import SwitchEndpoint

    wait_tcp((config.base.switch_host, config.base.grpc_port), config.base.deadline, "P4Runtime")
    return Controller([SwitchEndpoint("s1", config.base.grpc_address, 1, election_id=election_id, timeout=30.0,
                                      tls=config.client_tls())])


def run_controller(config: ClusterRoleConfig) -> int:
    """Pipeline, forwarding, the training job, then the ``sum`` job (attached last: a worker
    that sees it attached finds everything in place)."""
    base = config.base
    if config.workload == "ddp":  # one sum job; the steps are the DDP script's
        base = dataclasses.replace(base, train_steps=0)
    if config.collective == "gloo" or config.workload == "ddp-gloo":
        from innet.testbed.cluster.timed import serve_store

        serve_store(base.workers, base.deadline)
        return 0
    with _session(config, 1) as ctl:
        workers = _push_star(ctl, config, base)
        if config.luwu is not None:
            from innet.testbed.cluster.luwu_roles import create_job

            epoch = create_job(ctl, base, config.luwu)
            print(f"{JOB_TAG} " + json.dumps({"job": base.job_id, "epoch": epoch, "workers": base.workers,
                                              "nodes": config.luwu.nodes, "k": base.k, "workload": "luwu"}), flush=True)
        else:
            epoch, train = _demo_jobs(ctl, base, workers)
    if config.luwu is not None:
        if config.rejoin:  # out of the session above: a new set is attached from a session of its own
            serve_rejoin(config, epoch)
        return 0
    print(f"{JOB_TAG} " + json.dumps({"job": base.job_id, "epoch": epoch, "workers": base.workers, "k": base.k,
                                      "train": train, "workload": config.workload}), flush=True)
    if config.workload == "ddp":
        from innet.testbed.cluster.ddp import serve_rendezvous

        serve_rendezvous(base.workers, base.deadline)
    elif config.rejoin:
        serve_rejoin(config, epoch)
    return 0


def _push_star(ctl: Any, config: ClusterRoleConfig, base: ComposeConfig) -> tuple[Any, ...]:
    """``innet.p4`` and the star's forwarding on the switch: the workers' specs."""
    from innet.controller.jobs import Forwarding, Route, WorkerSpec
    from innet.controller.pipeline import PipelineConfig
    from innet.testbed.core.testbed import P4_PROGRAM
    from innet.testbed.ina.compose import pipeline_defines

    topo = _ports(config).topology()
    sw = topo.switch()
    workers = tuple(WorkerSpec(rank=h.rank, port=h.rank + 1, mac=h.mac, ip=h.address, udp_port=18767)
                    for h in topo.workers)
    ctl.push(PipelineConfig.load(P4_PROGRAM, pipeline_defines(base), switch_impl="innet"))
    routes = tuple(Route(f"{w.ip}/32", w.mac, w.port) for w in workers)
    ctl.install_forwarding({"s1": Forwarding(sw.mac, sw.ip, routes, tuple((w.ip, w.mac) for w in workers))})
    return workers


def _demo_jobs(ctl: Any, base: ComposeConfig, workers: tuple[Any, ...], after: int = 0) -> tuple[int, Any]:
    """The training job, then the ``sum`` job attached at an epoch above ``after`` (a restarted
    switch starts counting again; the workers wait for an epoch above the one they lost):
    its epoch and the training job's document."""
    from innet.controller.jobs import JobSpec
    from innet.testbed.ina.compose import create_training_job

    train = create_training_job(ctl, base, workers) if base.train_steps else None
    ctl.create_job(JobSpec(job_id=base.job_id, workers=workers, slot_base=0, slot_count=base.window, k=base.k,
                           mode="sum"))
    if after:
        ctl["s1"].attach(base.job_id, after + 1)
        return after + 1, train
    return int(ctl.attach(base.job_id)), train


def _switch_restarted(config: ClusterRoleConfig) -> bool:
    """Whether the switch lost the ``sum`` job (a new switch task: no pipeline, no jobs);
    False while it cannot be asked."""
    from innet.controller.errors import ControllerError

    try:
        with _session(config, 1) as ctl:
            try:
                return config.base.job_id not in {j.job_id for j in ctl.jobs()["s1"]}
            except ControllerError:  # connected, but no pipeline to read the jobs from
                return True
    except (ControllerError, ComposeError, OSError):
        return False


def _reattach(config: ClusterRoleConfig) -> int:
    """A new worker set: the training job at a new epoch with its initial parameters (momentum
    zeroed), then the ``sum`` job (last, as at the start); the ``sum`` job's new epoch."""
    from innet.host.training.loop import initial_params
    from innet.host.training.model import SoftmaxRegression
    from innet.testbed.ina.compose import train_plan

    base = config.base
    with _session(config, 1) as ctl:
        if base.train_steps and config.luwu is None:  # LuWu's parameters live on its nodes
            plan = train_plan(base)
            ctl.attach(plan.job)
            ctl.load_params(plan.job, initial_params(plan.train_config(), SoftmaxRegression()),
                            param_frac_bits=plan.param_frac_bits)
        return int(ctl.attach(base.job_id))


def serve_rejoin(config: ClusterRoleConfig, epoch: int) -> None:
    """Until every slot finished (or the deadline): ``start <slot>`` from a worker task answers
    ``first``, or ``again`` once a new worker set is attached (the slot's task was replaced);
    ``done <slot>`` marks a slot finished. Between requests it checks the switch: a switch
    task that lost the jobs (restarted) gets the pipeline, forwarding and both jobs again, the
    ``sum`` job at an epoch above ``epoch``, and the workers run again at it."""
    base = config.base
    started: set[int] = set()
    done: set[int] = set()
    end = time.monotonic() + base.deadline
    with socket.create_server(("0.0.0.0", REJOIN_PORT)) as server:
        server.settimeout(2.0)
        while len(done) < base.workers and time.monotonic() < end:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                if config.luwu is None and _switch_restarted(config):  # LuWu: not restored (docs)
                    with _session(config, 1) as ctl:
                        epoch, _ = _demo_jobs(ctl, base, _push_star(ctl, config, base), after=epoch)
                    print(f"{REPUSH_TAG} " + json.dumps({"epoch": epoch}), flush=True)
                continue
            with conn:
                conn.settimeout(30.0)
                words = conn.makefile("r").readline().split()
                if len(words) != 2 or words[0] not in ("start", "done") or not words[1].isdigit():
                    continue
                slot = int(words[1])
                if words[0] == "done":
                    done.add(slot)
                    conn.sendall(b"ok\n")
                    continue
                again = slot in started
                started.add(slot)
                if again:
                    epoch = _reattach(config)
                    print(f"{REJOIN_TAG} " + json.dumps({"slot": slot, "epoch": epoch}), flush=True)
                conn.sendall(b"again\n" if again else b"first\n")


def _tell_controller(config: ClusterRoleConfig, verb: str) -> str:
    """``verb`` and this task's slot to the rejoin controller: its answer."""
    host = os.environ.get("INNET_CONTROLLER_HOST", "controller")
    end = time.monotonic() + config.base.deadline
    while True:
        try:
            with socket.create_connection((host, REJOIN_PORT), timeout=120.0) as conn:
                conn.sendall(f"{verb} {config.slot}\n".encode())
                answer = conn.makefile("r").readline().strip()
                if answer:
                    return answer
        except OSError as error:
            if time.monotonic() > end:
                raise ComposeError(f"worker: controller {host}:{REJOIN_PORT} unreachable within "
                                   f"{config.base.deadline:g} s ({error})") from None
        time.sleep(0.5)


def _rejoining_worker(config: ClusterRoleConfig, rank: int,
                      run_set: Callable[[dict[str, Any], Callable[[int, float], None]], dict[str, Any]]) -> dict[str, Any]:
    """``run_set(job, on_step)`` (allreduce and train; LuWu's training); a worker set that ends
    early (a STALE answer: a new set was attached, or the chunk deadline: a peer died) runs
    again at the next epoch."""
    from innet.host.agent.agent import AgentError
    from innet.host.agent.aggregator import AggregationError

    if config.luwu is not None:  # the LuWu job is the only one on the switch
        config = dataclasses.replace(config, base=dataclasses.replace(config.base, train_steps=0))
    first = _tell_controller(config, "start") == "first"
    hold = {"step": config.hold[1] if first and config.hold and config.hold[0] == config.slot else -1}
    min_epoch = 1

    def on_step(step: int, loss: float) -> None:
        if step == hold["step"]:  # once: held until killed, or until a new set is attached
            hold["step"] = -1
            print(f"{HELD_TAG} " + json.dumps({"slot": config.slot, "step": step}), flush=True)
            wait_for_jobs(config, min_epoch + 1)
            raise AggregationError(f"worker rank {rank}: held at step {step}; a new worker set was attached")

    while True:
        job = wait_for_jobs(config, min_epoch)
        min_epoch = int(job["epoch"])
        try:
            doc = run_set(job, on_step)
        except (AggregationError, AgentError, TimeoutError) as error:
            print(f"worker rank {rank}: the set of epoch {job['epoch']} ended ({error}); joining the next",
                  flush=True)
            min_epoch = int(job["epoch"]) + 1
            continue
        _tell_controller(config, "done")
        return doc


def wait_for_jobs(config: ClusterRoleConfig, min_epoch: int = 1) -> dict[str, Any]:
    """The job document a worker needs (the JSON message of the controller's job), read from the
    switch once the ``sum`` job is attached (at ``min_epoch`` or later)."""
    from innet.controller.errors import ControllerError

    base = config.base
    end = time.monotonic() + base.deadline
    last = "no answer yet"
    while time.monotonic() < end:
        try:
            with _session(config, None) as ctl:
                jobs = {j.job_id: j for j in ctl.jobs()["s1"]}
        except ControllerError as error:
            last = str(error)
            jobs = {}
        done = jobs.get(base.job_id)
        train = jobs.get(base.job_id + 1)
        if done is not None and done.epoch >= max(1, min_epoch) and done.num_workers == base.workers \
                and (not base.train_steps or (train is not None and train.epoch > 0)):
            topo = base.topology()
            sw = topo.switch()
            return {"job": base.job_id, "epoch": done.epoch, "workers": base.workers, "k": base.k,
                    "window": base.window, "switch_mac": sw.mac, "switch_ip": sw.ip,
                    "train": ({"job": base.job_id + 1, "epoch": train.epoch, "steps": base.train_steps}
                              if base.train_steps and train is not None else None),
                    "hosts": [[h.mac, h.address] for h in sorted(topo.workers, key=lambda h: h.rank)]}
        last = f"jobs on the switch: {sorted(jobs) or 'none'}"
        time.sleep(1.0)
    raise ComposeError(f"worker: job {base.job_id} not attached for {base.workers} workers within "
                       f"{base.deadline:g} s ({last})")


def run_worker(config: ClusterRoleConfig) -> int:
    from innet.testbed.ina.compose import allreduce_and_train

    base = config.base
    if not 1 <= config.slot <= base.workers:
        raise ComposeError(f"worker: INNET_SLOT={config.slot}: must be a task slot within 1..{base.workers} "
                           "(more replicas than INNET_WORKERS?)")
    rank = config.slot - 1
    if config.workload == "ddp":
        from innet.testbed.cluster.ddp import run_worker_task

        return run_worker_task(base.workers, base.deadline, os.environ.get("INNET_CONTROLLER_HOST", "controller"))
    if config.workload == "ddp-gloo":
        from innet.testbed.cluster.luwu_roles import run_ddp_gloo_worker

        doc = run_ddp_gloo_worker(base, config.luwu, rank, os.environ.get("INNET_CONTROLLER_HOST", "controller"))
        doc["node"] = os.environ.get("INNET_NODE", "")
        print(f"{RESULT_TAG} " + json.dumps(doc), flush=True)
        _exit_past_native_destructors(0 if doc["ok"] else EXIT_ERROR)
    if config.luwu is not None:
        from innet.testbed.cluster.luwu_roles import run_worker as luwu_worker

        if config.rejoin:
            doc = _rejoining_worker(config, rank, lambda job, on_step: luwu_worker(
                base, config.luwu, rank, int(job["epoch"]), on_step))
        else:
            doc = luwu_worker(base, config.luwu, rank, _attached_epoch(config))
        doc["node"] = os.environ.get("INNET_NODE", "")
        print(f"{RESULT_TAG} " + json.dumps(doc), flush=True)
        return 0 if doc["ok"] else EXIT_ERROR
    if config.collective == "gloo":
        from innet.testbed.cluster.timed import timed_gloo

        doc = timed_gloo(base, rank, config.repeats)
    elif config.repeats:
        from innet.testbed.cluster.timed import timed_allreduces

        doc = timed_allreduces(base, wait_for_jobs(config), rank, config.repeats)
    elif config.rejoin:
        from innet.testbed.ina.compose import allreduce_and_train

        doc = _rejoining_worker(config, rank, lambda job, on_step: allreduce_and_train(base, job, rank, on_step))
    else:
        doc = allreduce_and_train(base, wait_for_jobs(config), rank)
    doc["node"] = os.environ.get("INNET_NODE", "")
    print(f"{RESULT_TAG} " + json.dumps(doc), flush=True)
    return 0 if doc["ok"] and (doc["train"] is None or doc["train"]["bit_exact"]) else EXIT_ERROR


def _exit_past_native_destructors(code: int) -> None:
    """End a gloo worker task once its result is printed: gloo's native threads can abort the
    process in their destructors at interpreter exit (SIGABRT after a good run), and Swarm
    would then start the task again (the same reason as ``innet.testbed.luwu.train``'s)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _current_epoch(config: ClusterRoleConfig) -> int:
    """The job's epoch on the switch now (0 while it cannot be read)."""
    from innet.controller.errors import ControllerError

    try:
        with _session(config, None) as ctl:
            jobs = {j.job_id: j for j in ctl.jobs()["s1"]}
    except (ControllerError, ComposeError, OSError):
        return 0
    job = jobs.get(config.base.job_id)
    return int(job.epoch) if job is not None else 0


def _attached_epoch(config: ClusterRoleConfig, min_epoch: int = 1) -> int:
    """The epoch of the job once the controller attached it for the workers (``min_epoch`` or later)."""
    return int(wait_for_jobs(dataclasses.replace(config, base=dataclasses.replace(config.base, train_steps=0)),
                             min_epoch)["epoch"])


def run_node(config: ClusterRoleConfig) -> int:
    """A LuWu optimizer node: index = task slot - 1, star rank N + index."""
    from innet.testbed.cluster.luwu_roles import NODE_RESULT_TAG, run_node as luwu_node

    if config.workload != "luwu" or config.luwu is None or not 1 <= config.slot <= config.luwu.nodes:
        raise ComposeError(f"node: INNET_WORKLOAD={config.workload!r}, INNET_SLOT={config.slot}: a node task needs "
                           f"INNET_WORKLOAD=luwu and a slot within 1..{config.luwu.nodes if config.luwu else 1}")
    epoch = _attached_epoch(config)
    if not config.rejoin:
        doc = luwu_node(config.base, config.luwu, config.slot - 1, epoch)
    while config.rejoin:  # a set that ends early (a new one attached): the next one, from the start
        doc = luwu_node(config.base, config.luwu, config.slot - 1, epoch,
                        superseded=lambda: _current_epoch(config) > epoch)
        if doc.get("state") == "done":
            break
        print(f"node {config.slot}: the set of epoch {epoch} ended ({doc.get('error')}); joining the next", flush=True)
        epoch = _attached_epoch(config, epoch + 1)
    doc["node"] = os.environ.get("INNET_NODE", "")
    print(f"{NODE_RESULT_TAG} " + json.dumps(doc), flush=True)
    return 0 if doc["exit"] == 0 and doc.get("state") == "done" else EXIT_ERROR


RUNNERS: dict[str, Callable[[ClusterRoleConfig], int]] = {
    "switch": run_switch, "controller": run_controller, "worker": run_worker, "node": run_node}


def main(argv: Sequence[str] | None = None) -> int:
    return role_main("innet.testbed.cluster.roles", RUNNERS, ClusterRoleConfig.from_env, argv, "innet cluster")


def role_main(module: str, runners: Mapping[str, Callable[[Any], int]], read_config: Callable[[], Any],
              argv: Sequence[str] | None, what: str, errors: tuple[type[BaseException], ...] = ()) -> int:
    """Run the role named by ``argv`` with the configuration ``read_config`` reads; a role's
    expected failure (``errors`` besides the stack's own) is one line on stderr and exit 1, which
    ``docker service logs`` shows."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0] not in runners:
        print(f"usage: python -m {module} {{{'|'.join(runners)}}}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return runners[args[0]](read_config())
    except Exception as error:
        from innet.controller.errors import ControllerError
        from innet.host.agent.aggregator import AggregationError

        if not isinstance(error, (ComposeError, ControllerError, AggregationError, OSError, *errors)):
            raise
        print(f"{what} {args[0]}: error: {error}", file=sys.stderr, flush=True)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
