"""Host-based ring allreduce baseline: torch.distributed with the gloo backend.

One process per worker (``python -m innet.testbed.core.gloo RANK WORLD MASTER_ADDR MASTER_PORT
SIZES...``), in its Mininet host or on loopback. Each rank allreduces float32 tensors of
every size ``repeats`` times after one warm-up, checks the sum exactly (rank r
contributes ``r+1`` in every element, so the result is ``N(N+1)/2`` everywhere), and
prints one JSON line per size on stdout::

    {"rank": 0, "elements": 65536, "times": [0.0123, ...], "ok": true}

torch is imported only here, inside the worker process; the rest of innet never needs it.
gloo inside Mininet hosts needs ``GLOO_SOCKET_IFNAME=<host>-eth0`` (the hosts share the
machine's hostname; gloo otherwise binds to whatever that name resolves to), see
:func:`gloo_env`.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from innet.testbed.core import ifstats

WORKER_MODULE = __name__


def gloo_available() -> bool:
    """True when torch with gloo can be imported (checked in a subprocess-free way)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def gloo_env(iface: str, master_addr: str, master_port: int) -> dict[str, str]:
    """Environment of a gloo rank bound to ``iface`` (``h1-eth0`` in Mininet, ``lo`` on loopback)."""
    return {"GLOO_SOCKET_IFNAME": iface, "MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port),
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def command(rank: int, world: int, master_addr: str, master_port: int, sizes: Sequence[int],
            repeats: int, timeout_s: float = 120.0, count_iface: str | None = None) -> list[str]:
    """argv of one gloo rank (``count_iface``: measure bytes on that interface)."""
    extra = ["--count-iface", count_iface] if count_iface else []
    return [sys.executable, "-m", WORKER_MODULE, str(rank), str(world), master_addr, str(master_port),
            "--repeats", str(repeats), "--timeout", str(timeout_s), *extra, *map(str, sizes)]


def rendezvous_socket(master_addr: str, master_port: int) -> socket.socket:
    """The listening socket of rank 0's rendezvous store, bound to ``master_addr`` only.

    ``init_method="tcp://..."`` makes torch's TCPStore listen on every interface of the
    machine, reachable from outside the testbed; bound to the testbed's address (the
    worker's interface in Mininet, 127.0.0.1 on loopback) it is not."""
    family = socket.AF_INET6 if ":" in master_addr else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((master_addr, master_port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def rendezvous_store(rank: int, world: int, master_addr: str, master_port: int, timeout: Any) -> Any:
    """torch's TCPStore for rank ``rank``; rank 0 serves it on ``rendezvous_socket``."""
    import torch.distributed as dist

    if rank != 0:
        return dist.TCPStore(master_addr, master_port, world, is_master=False, timeout=timeout)
    sock = rendezvous_socket(master_addr, master_port)
    try:
        # the store takes the descriptor over (its libuv server closes it with the store)
        return dist.TCPStore(master_addr, master_port, world, is_master=True, timeout=timeout,
                             master_listen_fd=sock.detach(), use_libuv=True, wait_for_workers=False)
    except BaseException:
        sock.close()
        raise


def run_rank(rank: int, world: int, master_addr: str, master_port: int, sizes: Sequence[int],
             repeats: int, timeout_s: float, count_iface: str | None = None) -> int:
    """Body of a rank process; exit status 0 when every check passed."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    store = rendezvous_store(rank, world, master_addr, master_port, timedelta(seconds=timeout_s))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout_s))
    expected = world * (world + 1) / 2
    all_ok = True
    try:
        for size in sizes:
            tensor = torch.empty(size, dtype=torch.float32)
            times = []
            wire = ifstats.ZERO
            ok = True
            for i in range(repeats + 1):
                tensor.fill_(rank + 1)
                dist.barrier()
                before = ifstats.read(count_iface) if count_iface else ifstats.ZERO
                start = time.perf_counter()
                dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
                elapsed = time.perf_counter() - start
                dist.barrier()  # the operation's last segments are on the wire before counting
                after = ifstats.read(count_iface) if count_iface else ifstats.ZERO
                ok = ok and bool(torch.all(tensor == expected))
                if i > 0:  # the first one warms up connections and buffers
                    times.append(elapsed)
                    wire = wire + (after - before)
            all_ok = all_ok and ok
            ops = max(1, repeats)
            print(json.dumps({"rank": rank, "elements": size, "times": times, "ok": ok,
                              "wire": {k: v / ops for k, v in asdict(wire).items()} if count_iface else None,
                              "wire_source": count_iface}), flush=True)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0 if all_ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog=f"python -m {WORKER_MODULE}", description="one gloo allreduce rank")
    parser.add_argument("rank", type=int)
    parser.add_argument("world", type=int)
    parser.add_argument("master_addr")
    parser.add_argument("master_port", type=int)
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--count-iface", default=None, help="interface whose counters give bytes on the wire")
    args = parser.parse_args(argv)
    os.environ.setdefault("MASTER_ADDR", args.master_addr)
    os.environ.setdefault("MASTER_PORT", str(args.master_port))
    return run_rank(args.rank, args.world, args.master_addr, args.master_port, args.sizes, args.repeats,
                    args.timeout, args.count_iface)


if __name__ == "__main__":
    sys.exit(main())
