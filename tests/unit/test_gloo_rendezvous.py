"""gloo's rendezvous store listens on the testbed's address only (with
``init_method="tcp://..."`` torch's TCPStore listened on every interface)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from innet.testbed.core.freeport import free_port
from innet.testbed.core.gloo import rendezvous_socket, rendezvous_store

LISTEN = "0A"


def listeners(port: int) -> list[str]:
    """Local addresses (hex, as in /proc/net/tcp*) of sockets listening on ``port``."""
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) == port and fields[3] == LISTEN:
                out.append(address)
    return out


def test_rendezvous_socket_is_bound_to_the_given_address():
    with rendezvous_socket("127.0.0.1", 0) as sock:
        host, port = sock.getsockname()
        assert host == "127.0.0.1"
        assert listeners(port) == ["0100007F"]


@pytest.mark.slow
def test_rank0_store_listens_on_loopback_only_and_serves_other_ranks():
    pytest.importorskip("torch.distributed", reason="torch (the gloo baseline's optional dependency) is not installed")
    port = free_port()
    master = rendezvous_store(0, 2, "127.0.0.1", port, timedelta(seconds=5))
    try:
        assert listeners(port) == ["0100007F"]  # not 00000000 (0.0.0.0) nor :: (tcp6)
        other = rendezvous_store(1, 2, "127.0.0.1", port, timedelta(seconds=5))
        other.set("k", "v")
        assert master.get("k") == b"v"
    finally:
        del master
