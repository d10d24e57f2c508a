"""Where innet's own files are: the package root (also the git checkout in development) and
its P4 programs. One definition, so that moving a module never silently points it elsewhere."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The ``innet`` package root (the repository root of an editable install)."""
P4_DIR = REPO / "p4"
"""innet's P4 programs: ``innet.p4``, ``include/``, ``examples/``."""
