"""The TCP link between geo sites names a dead peer the same way however it died."""
from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from innet.host.geo.channel import ChannelError, TcpChannel


@pytest.fixture
def pair() -> Iterator[tuple[TcpChannel, socket.socket]]:
    """A link named "link 1-2" and the raw socket of its peer; the link is closed after the test."""
    srv = TcpChannel.listen()
    try:
        link = TcpChannel.connect(srv.getsockname(), timeout=5.0, name="link 1-2")
        peer, _ = srv.accept()
    finally:
        srv.close()
    try:
        yield link, peer
    finally:
        link.close()
        peer.close()


def _reset(peer: socket.socket) -> None:
    """Close with SO_LINGER 0: the kernel sends RST instead of FIN."""
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    peer.close()


def test_a_peer_that_closes_is_named(pair: tuple[TcpChannel, socket.socket]) -> None:
    link, peer = pair
    peer.close()
    with pytest.raises(ChannelError, match=r"^link 1-2: peer closed the link$"):
        link.recv(timeout=5.0)


def test_a_peer_that_resets_is_named_as_closed_too(pair: tuple[TcpChannel, socket.socket]) -> None:
    """A process killed with unread data in its socket sends RST, not FIN: the receiver gets
    ECONNRESET, which is the same event for the stage (its neighbour is gone)."""
    link, peer = pair
    link.send(b"x" * 1000)  # unread at the peer, so its close resets
    _reset(peer)
    with pytest.raises(ChannelError, match=r"^link 1-2: peer closed the link \(Connection reset by peer\)$"):
        link.recv(timeout=5.0)


def test_sending_to_a_reset_peer_is_named_as_closed(pair: tuple[TcpChannel, socket.socket]) -> None:
    link, peer = pair
    _reset(peer)
    with pytest.raises(ChannelError, match=r"^link 1-2: peer closed the link \("):
        for _ in range(100):  # the first sends may still land in the kernel's buffer
            link.send(b"y" * 65536)
