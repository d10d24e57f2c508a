"""Mininet's logger and interactive CLI, as innet's entry points use them."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator


def quiet_mininet() -> None:
    """Mininet logs tc warnings (HTB quantum) as errors; keep the entry point's output readable."""
    try:
        from mininet.log import setLogLevel

        setLogLevel("critical")
    except ImportError:
        pass


@contextlib.contextmanager
def quiet_links() -> Iterator[None]:
    """Mininet's logger at ``critical`` while links are configured, then as it was: ``tc``
    warns that the HTB quantum of a fast link is big (harmless: HTB then uses its largest
    quantum), and Mininet prints that as "*** Error" in every entry point that builds a net."""
    from mininet.log import lg

    level = lg.level
    lg.setLevel(50)  # logging.CRITICAL
    try:
        yield
    finally:
        lg.setLevel(level)


def run_cli(net: Any) -> None:
    """Mininet's CLI on ``net``. Its commands print through Mininet's logger at level
    ``output``, which ``quiet_mininet`` silences for the bring-up: the CLI needs it back."""
    from mininet.cli import CLI
    from mininet.log import setLogLevel

    setLogLevel("output")
    try:
        CLI(net)
    finally:
        setLogLevel("critical")
