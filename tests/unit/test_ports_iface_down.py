"""An interface port whose link goes down (ENETDOWN from the raw socket) must not end the data plane."""

from __future__ import annotations

import errno
import logging

import pytest

from innet.switch.ports import IfacePort


class _DownSocket:
    def recvfrom(self, size: int) -> tuple[bytes, tuple[object, ...]]:
        raise OSError(errno.ENETDOWN, "Network is down")


def test_receive_on_a_link_that_went_down_returns_nothing_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    port = IfacePort.__new__(IfacePort)
    port.number, port.iface, port._sock = 3, "r2-eth1", _DownSocket()  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING, logger="innet.switch.ports"):
        assert port.receive() is None
    assert "port 3 (r2-eth1): receive failed: [Errno 100] Network is down" in caplog.text
