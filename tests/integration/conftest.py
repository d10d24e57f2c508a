"""Fixtures shared by the loopback integration tests (helpers live in ``tests/testkit``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.p4rt_shell import ensure_shell_python


@pytest.fixture(scope="session")
def shell_python() -> Path:
    """Python of the cached venv with the pinned p4runtime-shell (testkit.p4rt_shell)."""
    return ensure_shell_python()
