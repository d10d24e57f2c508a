"""Mininet's logger and interactive CLI, as innet's entry points use them."""

from __future__ import annotations

from typing import Any


def quiet_mininet() -> None:
    """Mininet logs tc warnings (HTB quantum) as errors; keep the entry point's output readable."""
    try:
        from mininet.log import setLogLevel

        setLogLevel("critical")
    except ImportError:
        pass


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
