"""The TCP link between geo sites names a dead peer the same way however it died."""
from __future__ import annotations

import socket
import struct

import pytest

from innet.host.geo.channel import ChannelError, TcpChannel


def _pair() -> tuple[TcpChannel, socket.socket]:
    srv = TcpChannel.listen()
    try:
        client = TcpChannel.connect(srv.getsockname(), timeout=5.0, name="link 1-2")
        peer, _ = srv.accept()
    finally:
        srv.close()
    return client, peer


def test_a_peer_that_closes_is_named() -> None:
    link, peer = _pair()
    try:
        peer.close()
        with pytest.raises(ChannelError, match=r"^link 1-2: peer closed the link$"):
            link.recv(timeout=5.0)
    finally:
        link.close()


def test_a_peer_that_resets_is_named_as_closed_too() -> None:
    """A process killed with unread data in its socket sends RST, not FIN: the receiver gets
    ECONNRESET, which is the same event for the stage (its neighbour is gone)."""
    link, peer = _pair()
    try:
        link.send(b"x" * 1000)  # unread at the peer, so its close resets
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()
        with pytest.raises(ChannelError, match=r"^link 1-2: peer closed the link \(Connection reset by peer\)$"):
            link.recv(timeout=5.0)
    finally:
        link.close()


def test_sending_to_a_reset_peer_is_named_as_closed() -> None:
    link, peer = _pair()
    try:
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()
        with pytest.raises(ChannelError, match=r"^link 1-2: peer closed the link \("):
            for _ in range(100):  # the first sends may still land in the kernel's buffer
                link.send(b"y" * 65536)
    finally:
        link.close()
