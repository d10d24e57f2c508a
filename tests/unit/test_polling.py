"""poll_until returns the condition's first truthy value, or raises a TimeoutError naming what."""

from __future__ import annotations

import itertools
import time

import pytest

from innet.polling import PollTimeout, poll_until


def test_returns_the_first_truthy_value() -> None:
    calls = itertools.count()
    assert poll_until(lambda: next(calls) >= 3 and "ready", timeout=5, interval=0.001, what="x") == "ready"


def test_timeout_names_what_and_the_timeout() -> None:
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"switch s1: not ready within 0.2 s") as info:
        poll_until(lambda: False, timeout=0.2, interval=0.01, what="switch s1")
    assert isinstance(info.value, PollTimeout) and info.value.what == "switch s1"
    assert 0.2 <= time.monotonic() - start < 2.0


def test_condition_errors_pass_through() -> None:
    def exited() -> bool:
        raise RuntimeError("process exited with status 1")

    with pytest.raises(RuntimeError, match="exited"):
        poll_until(exited, timeout=5, what="x")


def test_last_call_comes_after_the_deadline() -> None:
    """A thing that gets ready during the final sleep counts as ready, not as a timeout."""
    deadline = time.monotonic() + 0.1
    assert poll_until(lambda: time.monotonic() >= deadline, timeout=0.1, interval=1.0, what="x")
