"""The roles of the rail-only stack (:mod:`innet.testbed.cluster.rail_stack`): ``switch``,
``controller`` and ``gpu`` tasks.

    python -m innet.testbed.cluster.rail_roles switch|controller|gpu

Every task derives the same :func:`~innet.testbed.core.topology.rail_only` topology from
``INNET_RAIL_DOMAINS`` and ``INNET_RAIL_GPUS``, so the controller's jobs and the GPUs' plans
agree on addresses, ports and shards without sharing anything but the overlays:

* ``switch`` (``INNET_RAIL=G``): ``innet-switch`` with one UDP port per domain (port ``D`` is
  GPU ``d<D>g<G>``'s), P4Runtime over mutual TLS, replaced by ``exec``;
* ``controller``: ``innet.p4`` and :func:`innet.testbed.core.forwarding.forwarding` on every
  rail switch, :func:`innet.testbed.rail.grid.hierarchical_jobs` as one sharded job, attached
  (one epoch on every rail); prints an ``INNET_JOB`` line and exits 0;
* ``gpu`` (``INNET_DOMAIN=D``, ``INNET_GPU=G``): reads the job's epoch from its rail switch
  (read-only P4Runtime), then runs :func:`innet.testbed.rail.worker.run`: the hierarchical
  allreduce of ``INNET_ELEMENTS`` int32, ``INNET_REPEATS`` times after a first, each checked
  against the wrapping sum of every GPU's integers; prints one ``INNET_RESULT`` line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from innet.testbed.cluster.roles import (EXIT_ERROR, JOB_TAG, RESULT_TAG, ClusterRoleConfig, k_for_overlay,
                                         role_main)
from innet.testbed.ina.compose import ComposeConfig, ComposeError

AGENT_PORT = 18767
JOB_ID = 1


@dataclass(frozen=True)
class RailRoleConfig:
    """What every task of the rail stack reads from its environment."""

    domains: int
    """INNET_RAIL_DOMAINS: HB domains (y)."""
    gpus: int
    """INNET_RAIL_GPUS: GPUs per domain (x), one rail each."""
    base: ComposeConfig
    """Ports, deadline, elements and K (from INNET_OVERLAY_MTU) as in the star's stack."""
    tls_dir: Path | None
    rail: int = 0
    """INNET_RAIL: a switch task's rail (1-based)."""
    domain: int = 0
    """INNET_DOMAIN: a GPU task's domain (1-based)."""
    gpu: int = 0
    """INNET_GPU: a GPU task's index in its domain = its rail (1-based)."""
    repeats: int = 2

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "RailRoleConfig":
        env = os.environ if env is None else env
        names = ("INNET_RAIL_DOMAINS", "INNET_RAIL_GPUS", "INNET_RAIL", "INNET_DOMAIN", "INNET_GPU", "INNET_REPEATS",
                 "INNET_OVERLAY_MTU")
        try:
            y, x, rail, domain, gpu, repeats, mtu = (int(env.get(n, d) or d) for n, d in
                                                      zip(names, ("2", "2", "0", "0", "0", "2", "1450")))
        except ValueError:
            raise ComposeError(" / ".join(f"{n}={env.get(n)!r}" for n in names) + ": expected integers") from None
        if not 2 <= y <= 8 or not 2 <= x <= 8 or not 0 <= rail <= x or not 0 <= domain <= y or not 0 <= gpu <= x:
            raise ComposeError(f"rail stack: {y} domains x {x} GPUs (each 2..8), rail {rail}, domain {domain}, "
                               f"gpu {gpu} must be within them")
        base = dataclasses.replace(ComposeConfig.from_env({**env, "INNET_WORKERS": str(y), "INNET_TRAIN_STEPS": "0"}),
                                   k=k_for_overlay(mtu))
        tls = None if env.get("INNET_TLS", "on") == "off" else Path(env.get("INNET_TLS_DIR", "/run/secrets"))
        return cls(y, x, base, tls, rail, domain, gpu, max(repeats, 0))

    def topology(self) -> Any:
        from innet.testbed.core.topology import rail_only

        return rail_only(domains=self.domains, gpus_per_domain=self.gpus)

    def role_config(self, rail: int) -> ClusterRoleConfig:
        """The star stack's view of rail switch ``rail`` (its service name, ``domains`` ports):
        what its switch argv and P4Runtime sessions are made from."""
        return ClusterRoleConfig(base=dataclasses.replace(self.base, switch_host=f"rail{rail}"), tls_dir=self.tls_dir)


def run_switch(config: RailRoleConfig) -> int:
    from innet.testbed.cluster.roles import switch_argv

    if not 1 <= config.rail <= config.gpus:
        raise ComposeError(f"switch: INNET_RAIL={config.rail}: must be a rail within 1..{config.gpus}")
    argv = switch_argv(config.role_config(config.rail))
    os.execv(argv[0], argv)
    return EXIT_ERROR  # not reached


def _controller(config: RailRoleConfig, election_id: int | None) -> Any:
    """A Controller over every rail switch service (the topology's names: ``r1``, ``r2``...)."""
    from innet.controller.controller import Controller
    from innet.controller.switch import SwitchEndpoint
    from innet.testbed.cluster.roles import wait_tcp

    endpoints = []
    for g in range(1, config.gpus + 1):
        role = config.role_config(g)
        wait_tcp((role.base.switch_host, role.base.grpc_port), config.base.deadline, f"P4Runtime of rail{g}")
        endpoints.append(SwitchEndpoint(f"r{g}", role.base.grpc_address, 1, election_id=election_id, timeout=30.0,
                                        tls=role.client_tls()))
    return Controller(endpoints)


def run_controller(config: RailRoleConfig) -> int:
    """Pipeline and forwarding on every rail switch, then the hierarchical job, attached."""
    from innet.controller.pipeline import PipelineConfig
    from innet.testbed.core.forwarding import forwarding
    from innet.testbed.core.testbed import P4_PROGRAM
    from innet.testbed.ina.compose import pipeline_defines
    from innet.testbed.rail.grid import RailGrid, hierarchical_jobs

    topo = config.topology()
    grid = RailGrid.of(topo)
    with _controller(config, 1) as ctl:
        ctl.push(PipelineConfig.load(P4_PROGRAM, pipeline_defines(config.base), switch_impl="innet"))
        ctl.install_forwarding(forwarding(topo))
        jobs, plan = hierarchical_jobs(grid, JOB_ID, window=config.base.window, k=config.base.k, agent_port=AGENT_PORT)
        ctl.create_sharded_job(jobs, plan)
        epoch = int(ctl.attach(JOB_ID))
    print(f"{JOB_TAG} " + json.dumps({"job": JOB_ID, "epoch": epoch, "domains": config.domains, "gpus": config.gpus,
                                      "k": config.base.k, "rails": list(grid.rails), "workload": "rail"}), flush=True)
    return 0


def _attached_epoch(config: RailRoleConfig) -> int:
    """The job's epoch on this GPU's rail switch once attached (read-only sessions)."""
    from innet.controller.errors import ControllerError

    end = time.monotonic() + config.base.deadline
    last = "no answer yet"
    while time.monotonic() < end:
        try:
            with _one_rail(config) as ctl:
                jobs = {j.job_id: j for j in ctl.jobs()[f"r{config.gpu}"]}
        except ControllerError as error:
            last, jobs = str(error), {}
        job = jobs.get(JOB_ID)
        if job is not None and job.epoch >= 1 and job.num_workers == config.domains:
            return int(job.epoch)
        last = f"jobs on rail{config.gpu}: {sorted(jobs) or 'none'}"
        time.sleep(1.0)
    raise ComposeError(f"gpu d{config.domain}g{config.gpu}: job {JOB_ID} not attached on rail{config.gpu} within "
                       f"{config.base.deadline:g} s ({last})")


def _one_rail(config: RailRoleConfig) -> Any:
    from innet.controller.controller import Controller
    from innet.controller.switch import SwitchEndpoint
    from innet.testbed.cluster.roles import wait_tcp

    role = config.role_config(config.gpu)
    wait_tcp((role.base.switch_host, role.base.grpc_port), config.base.deadline, f"P4Runtime of rail{config.gpu}")
    return Controller([SwitchEndpoint(f"r{config.gpu}", role.base.grpc_address, 1, election_id=None, timeout=30.0,
                                      tls=role.client_tls())])


def gpu_plan(config: RailRoleConfig, epoch: int, resolve: Callable[[str], str] = socket.gethostbyname) -> Any:
    """This GPU's :class:`~innet.testbed.rail.worker.RailPlan`: the tunnel to its rail switch's
    UDP port of its domain, its HB domain's peers by their aliases on the domain's network."""
    from innet import wire
    from innet.host.agent.transport import TunnelTransportConfig
    from innet.testbed.cluster.rail_stack import hb_alias
    from innet.testbed.rail.grid import HB_PORT, RailGrid, switch_of
    from innet.testbed.rail.worker import RailPlan

    topo = config.topology()
    grid = RailGrid.of(topo)
    d, g = config.domain - 1, config.gpu - 1
    host = topo.host(grid.hosts[d][g])
    sw = switch_of(topo, host.name)
    port = topo.uplink(host.name).b_port
    role = config.role_config(config.gpu)
    transport = TunnelTransportConfig(tunnel=(resolve(role.base.switch_host), role.base.udp_port(port - 1)),
                                      local=wire.Endpoint(host.mac, host.address, AGENT_PORT),
                                      switch=wire.Endpoint(sw.mac, sw.ip, wire.UDP_PORT),
                                      bind=("0.0.0.0", 0))  # the rail switch is on another machine: not loopback
    peers = tuple((resolve(hb_alias(config.domain, j)), HB_PORT) for j in range(1, config.gpus + 1))
    return RailPlan(job=JOB_ID, domain=d, gpu=g, x=config.gpus, y=config.domains, window=config.base.window,
                    k=config.base.k, transport=transport, epoch=epoch, hb_peers=peers, hb_names=grid.hosts[d],
                    switch=f"{sw.name} (service rail{config.gpu})", op="allreduce", sizes=(config.base.elements,),
                    repeats=config.repeats, chunk_deadline=min(60.0, config.base.deadline),
                    hb_deadline=min(120.0, config.base.deadline))


def run_gpu(config: RailRoleConfig) -> int:
    """This GPU's hierarchical allreduces (module docstring); one ``INNET_RESULT`` line."""
    from innet.testbed.core.testbed import parse_results
    from innet.testbed.rail.worker import run

    if not 1 <= config.domain <= config.domains or not 1 <= config.gpu <= config.gpus:
        raise ComposeError(f"gpu: INNET_DOMAIN={config.domain}, INNET_GPU={config.gpu}: within "
                           f"1..{config.domains} and 1..{config.gpus}")
    plan = gpu_plan(config, _attached_epoch(config))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # the worker's JSON lines, one per size
        code = run(plan)
    results = parse_results(out.getvalue())
    doc = {"rank": plan.rank, "domain": config.domain, "gpu": config.gpu, "host": socket.gethostname(),
           "node": os.environ.get("INNET_NODE", ""), "epoch": plan.epoch, "k": plan.k, "elements": config.base.elements,
           "ok": code == 0 and len(results) == 1 and results[0].ok,
           "times": list(results[0].times) if results else [], "hb_peers": [list(p) for p in plan.hb_peers]}
    print(f"{RESULT_TAG} " + json.dumps(doc), flush=True)
    return 0 if doc["ok"] else EXIT_ERROR


RUNNERS: dict[str, Callable[[RailRoleConfig], int]] = {"switch": run_switch, "controller": run_controller,
                                                       "gpu": run_gpu}


def main(argv: Sequence[str] | None = None) -> int:
    from innet.host.rail.hbdomain import HbError
    from innet.testbed.cluster.rail_stack import ROLES_MODULE

    return role_main(ROLES_MODULE, RUNNERS, RailRoleConfig.from_env, argv, "innet cluster rail", (HbError,))


if __name__ == "__main__":
    sys.exit(main())
