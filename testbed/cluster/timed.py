"""Timed allreduces of a worker task (``INNET_REPEATS`` > 0): what ``innet bench cluster`` reads.

One agent session runs ``repeats`` exact int32 allreduces of ``INNET_ELEMENTS`` over the frame
tunnel, back to back: the first is also the rendezvous (workers find the attached job one
poll apart, so its time holds their start skew), the next ones start together because the
switch multicasts each result to every rank at once, so they time the collective itself.
Bytes are the task's own interface counters (``/proc/net/dev``, every interface but ``lo``)
over the timed operations: the inner frames, without the VXLAN encapsulation the underlay
adds per packet (:data:`VXLAN_OVERHEAD`). A result document here is the JSON the task prints
after ``INNET_RESULT``; a job document the controller's JSON job (both wire messages).
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any, Callable

from innet.testbed.ina.compose import ComposeConfig, digest

VXLAN_OVERHEAD = 14 + 20 + 8 + 8
"""Bytes the overlay adds to each frame on the underlay: outer Ethernet, IPv4, UDP and VXLAN headers."""


def interface_counters(path: Path = Path("/proc/net/dev")) -> dict[str, int]:
    """Bytes and packets sent and received by every interface but ``lo``, summed."""
    total = {"rx_bytes": 0, "rx_packets": 0, "tx_bytes": 0, "tx_packets": 0}
    for line in path.read_text().splitlines()[2:]:
        name, _, fields = line.partition(":")
        if name.strip() == "lo":
            continue
        values = [int(v) for v in fields.split()]
        total["rx_bytes"] += values[0]
        total["rx_packets"] += values[1]
        total["tx_bytes"] += values[8]
        total["tx_packets"] += values[9]
    return total


def agent_config(config: ComposeConfig, job: dict[str, Any], rank: int) -> Any:
    """The host agent's configuration for rank ``rank`` of ``job`` (the document
    :func:`~innet.testbed.cluster.roles.wait_for_jobs` returns): the frame tunnel to the switch
    service's UDP port of that rank."""
    from innet import wire
    from innet.host.agent.agent import AgentConfig
    from innet.host.agent.aggregator import JobConfig, Timing
    from innet.host.agent.transport import TunnelTransportConfig

    mac, ip = job["hosts"][rank]
    transport = TunnelTransportConfig(tunnel=(socket.gethostbyname(config.switch_host), config.udp_port(rank)),
                                      local=wire.Endpoint(mac, ip, 18767),
                                      switch=wire.Endpoint(job["switch_mac"], job["switch_ip"], wire.UDP_PORT),
                                      bind=("0.0.0.0", 0))
    return AgentConfig(JobConfig(job=job["job"], rank=rank, num_workers=job["workers"], window=job["window"],
                                 k=job["k"], epoch=job["epoch"]),
                       transport, timing=Timing(chunk_deadline=min(60.0, config.deadline)))


def timed_allreduces(config: ComposeConfig, job: dict[str, Any], rank: int, repeats: int) -> dict[str, Any]:
    """``repeats`` exact allreduces through the switch on ``job``; the result document."""
    from innet.host.agent.agent import Agent

    with Agent(agent_config(config, job, rank), capacity=config.elements) as agent:
        doc = _timed(agent.allreduce_int, rank, job["workers"], config.elements, repeats, f"K={job['k']}")
    return {**doc, "k": job["k"], "epoch": job["epoch"]}


STORE_PORT = 29500
"""TCP port of the gloo runs' rendezvous store, served by the controller task."""
DONE_KEY = "innet_done"


def local_address(peer: str) -> str:
    """This task's address on the network that reaches ``peer`` (the overlay's)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((socket.gethostbyname(peer), 9))  # no datagram is sent: routing only
        return str(probe.getsockname()[0])


def local_interface(peer: str) -> str:
    """Name of the interface this task reaches ``peer`` over (the overlay's, not docker_gwbridge's)."""
    import fcntl
    import struct

    local = local_address(peer)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
            except OSError:
                continue
            if socket.inet_ntoa(packed[20:24]) == local:
                return name
    raise OSError(f"no interface holds {local}, the address that reaches {peer}")


def serve_store(workers: int, deadline: float, port: int = STORE_PORT, key: str = DONE_KEY,
                what: str = "gloo store") -> None:
    """The controller's part of a torch run (gloo here, torchrun's rendezvous in
    :mod:`~innet.testbed.cluster.ddp`): a TCPStore on ``port``, served until ``workers`` added 1 to ``key``."""
    from datetime import timedelta

    import torch.distributed as dist

    store = dist.TCPStore("0.0.0.0", port, None, is_master=True, timeout=timedelta(seconds=deadline),
                          wait_for_workers=False)
    store.add(key, 0)
    end = time.monotonic() + deadline
    while (done := store.add(key, 0)) < workers:
        if time.monotonic() > end:
            raise OSError(f"{what}: {done} of {workers} done within {deadline:g} s")
        time.sleep(0.5)
    print(f"{what}: all {workers} done", flush=True)


def timed_gloo(config: ComposeConfig, rank: int, repeats: int, store_host: str = "controller") -> dict[str, Any]:
    """``repeats`` exact int32 allreduces with gloo's ring among the worker tasks (the rendezvous
    store is the controller task's); the result document, shaped as :func:`timed_allreduces`'."""
    import os
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = local_interface(store_host)
    timeout = timedelta(seconds=config.deadline)
    # by address: torch 2.13's own lookup of a Swarm service name (Docker's embedded DNS) gives nonsense
    store = dist.TCPStore(socket.gethostbyname(store_host), STORE_PORT, None, is_master=False, timeout=timeout)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=config.workers, timeout=timeout)

    def allreduce(values: Any) -> Any:
        tensor = torch.from_numpy(values)
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor.numpy()

    try:
        doc = _timed(allreduce, rank, config.workers, config.elements, repeats, "gloo")
    finally:
        dist.destroy_process_group()
        store.add(DONE_KEY, 1)
    return {**doc, "k": 0, "epoch": 0}


def _timed(allreduce: Callable[[Any], Any], rank: int, workers: int, elements: int, repeats: int,
           what: str) -> dict[str, Any]:
    """Run ``allreduce`` ``repeats`` times on rank ``rank``'s exact values, time and check each."""
    import numpy as np

    from innet.testbed.core.ina_worker import exact_values

    times: list[float] = []
    exact: list[bool] = []
    first_done = 0.0
    before = after = interface_counters()
    got = np.zeros(0, dtype=np.int32)
    for repeat in range(repeats):
        if repeat == 1:
            before = interface_counters()
        start = time.monotonic()
        got = allreduce(exact_values(rank, elements, repeat))
        times.append(time.monotonic() - start)
        if repeat == 0:
            first_done = time.time()
        want = np.sum([exact_values(r, elements, repeat).astype(np.int64) for r in range(workers)], axis=0)
        exact.append(bool(np.array_equal(got, want.astype(np.int32))))
    after = interface_counters()
    timed = max(repeats - 1, 1)
    print(f"worker rank {rank}: {repeats} allreduces of {elements} int32 ({what}), "
          f"{'exact' if all(exact) else 'WRONG'}, " + ", ".join(f"{t * 1e3:.1f}" for t in times) + " ms", flush=True)
    return {"rank": rank, "host": socket.gethostname(), "elements": elements, "ok": all(exact),
            "sha256": digest(got), "seconds": round(sum(times), 4), "times": [round(t, 6) for t in times],
            "first_done_unix": first_done, "train": None,
            "wire_per_op": {key: (after[key] - before[key]) / timed for key in after} if repeats > 1 else None}
