"""Ports for processes that must be told their port before they start (BMv2's gRPC and Thrift
servers, switch-to-switch UDP ports, HB-domain listeners, gloo's rendezvous).

Binding port 0 and closing returns a port from the kernel's *ephemeral* range, the range the
kernel also hands out to every outgoing connection. Between the check and the child's bind,
any connect() on the machine may take that port as its source port; a member of an HB domain
that retries connect() to a peer's not-yet-bound port can even connect to itself (TCP
simultaneous open), so the peer cannot bind and the run fails. Ports here are therefore
picked at random *below* ``ip_local_port_range`` and checked for TCP and UDP, so only
another explicit bind can take them.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 10000
"""Below this are well-known and registered services one may be running."""
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_low() -> int:
    """The first port the kernel hands out to connect() and bind(0) (32768 by default)."""
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct ports free for TCP and UDP on ``host`` now, outside the ephemeral range."""
    top = ephemeral_low()
    if top - LOWEST < 4 * n:
        top = 65536  # a configured range that leaves nothing below it: fall back to all ports
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        for _ in range(200 * max(n, 1)):
            if len(ports) == n:
                break
            port = random.randrange(LOWEST, top)
            if port in ports:
                continue
            pair = [socket.socket(socket.AF_INET, kind) for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM)]
            try:
                for sock in pair:
                    sock.bind((host, port))
            except OSError:
                for sock in pair:
                    sock.close()
                continue
            held.extend(pair)
            ports.append(port)
        if len(ports) < n:
            raise OSError(f"no {n} free ports on {host} between {LOWEST} and {top - 1}")
        return ports
    finally:
        for sock in held:
            sock.close()


def free_port(host: str = "127.0.0.1") -> int:
    """One port free for TCP and UDP on ``host`` now, outside the ephemeral range."""
    return free_ports(1, host)[0]


P4RUNTIME_BASE = 9559
"""P4Runtime port of a testbed's first switch; switch ``n`` (0-based, topology order) gets
``9559 + n``, as p4-utils numbers its switches (and 9559 is P4Runtime's IANA port)."""
THRIFT_BASE = 9090
"""Thrift port of the first BMv2 switch (``simple_switch_CLI``'s default); switch ``n`` gets ``9090 + n``."""


def tcp_port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a TCP listener could bind ``host:port`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def predictable_ports(base: int, count: int, avoid: set[int] | frozenset[int] = frozenset(),
                      host: str = "127.0.0.1") -> list[tuple[int, int]]:
    """For ``n`` in ``0..count-1``: (wanted, given) ports, wanted being ``base + n``; a wanted
    port that is in ``avoid`` (another testbed's) or not free is replaced by the next free
    port above ``base + count - 1``, so the caller can say which ones moved."""
    out: list[tuple[int, int]] = []
    taken = set(avoid)
    spare = base + count
    for n in range(count):
        wanted = base + n
        port = wanted
        if port in taken or not tcp_port_free(port, host):
            while spare in taken or not tcp_port_free(spare, host):
                spare += 1
                if spare > 65535:
                    raise OSError(f"no free TCP port on {host} above {base + count - 1} for switch {n}")
            port = spare
            spare += 1
        taken.add(port)
        out.append((wanted, port))
    return out
