"""Ports handed to child processes lie below the kernel's ephemeral range and are free for TCP and UDP."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from innet.testbed.core import freeport


def test_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    ports = freeport.free_ports(40)
    assert len(set(ports)) == 40
    low = freeport.ephemeral_low()
    assert all(freeport.LOWEST <= p < low for p in ports)
    for port in ports:
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            with socket.socket(socket.AF_INET, kind) as s:
                s.bind(("127.0.0.1", port))


def test_a_port_in_use_is_never_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    busy = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    busy.bind(("127.0.0.1", freeport.free_port()))
    taken = busy.getsockname()[1]
    choices = iter([taken, taken, taken + 1 if taken + 1 < freeport.ephemeral_low() else taken - 1])
    monkeypatch.setattr(freeport.random, "randrange", lambda a, b: next(choices))
    try:
        assert freeport.free_port() != taken
    finally:
        busy.close()


def test_the_range_comes_from_the_kernel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    limits = tmp_path / "ip_local_port_range"
    limits.write_text("20000\t60999\n")
    monkeypatch.setattr(freeport, "_RANGE_FILE", limits)
    assert freeport.ephemeral_low() == 20000
    assert all(p < 20000 for p in freeport.free_ports(10))
    limits.write_text("garbage")
    assert freeport.ephemeral_low() == 32768
