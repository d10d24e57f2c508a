"""Fuzz tests: seeded and bounded in the default suite, longer with ``INNET_FUZZ_N``.

Every test here runs under pytest-timeout's *thread* method (the tests use SIGALRM
themselves as a per-input hang watchdog, see ``fuzzlib.watchdog``). See
docs/reliability.md for what is fuzzed and how to run the long mode.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.fuzz)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(0 if _long() else 120, method="thread"))


def _long() -> bool:
    from fuzzlib import fuzz_n

    return fuzz_n() is not None


def pytest_terminal_summary(terminalreporter: object) -> None:
    from fuzzlib import STATS

    if STATS:
        write = getattr(terminalreporter, "write_line")
        write("fuzz inputs run: " + ", ".join(f"{k}={v}" for k, v in sorted(STATS.items())))
