"""The vendored BMv2-confirmed corpus (tests/conformance/bmv2) equals ../shared/conformance.

The corpus was written for this project and confirmed on real BMv2; it is vendored so that
a clone without ../shared runs it too. Where the shared copy exists (CI clones it beside
the repository), every file must be byte-identical in both places, so a fix made there
reaches the repository and a local edit here is noticed."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENDORED = REPO / "tests" / "conformance" / "bmv2"
SHARED = REPO.parent / "shared" / "conformance"


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def test_vendored_corpus_is_complete() -> None:
    files = _files(VENDORED)
    stfs = {n for n in files if n.endswith(".stf")}
    assert len(stfs) >= 21
    assert all(n[:-4] + ".p4" in files for n in stfs)
    assert "p4c-samples-bmv2-pass.txt" in files and "README.md" in files


def test_vendored_corpus_equals_shared() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"no shared corpus at {SHARED} to compare with (a clone of the repository alone)")
    vendored, shared = _files(VENDORED), _files(SHARED)
    assert sorted(vendored) == sorted(shared)
    assert [n for n in shared if vendored[n] != shared[n]] == []
