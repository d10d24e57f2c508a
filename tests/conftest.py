"""Collects STF tests as pytest items.

Every ``tests/**/*.stf`` file is collected where pytest walks, the BMv2-confirmed corpus
in ``tests/conformance/bmv2`` included (vendored from ``../shared/conformance``, which
``tests/unit/test_bmv2_corpus.py`` keeps it equal to when that directory exists);
``p4/**/*.stf`` are collected through this conftest when pytest walks ``tests/``. Each item
is named after its ``.stf`` file and runs the same-named ``.p4`` next to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

REPO = Path(__file__).resolve().parent.parent


class StfFailure(Exception):
    """An STF test whose outputs differ from the expected ones."""


class StfItem(pytest.Item):
    def __init__(self, *, stf: Path, **kw: Any) -> None:
        super().__init__(**kw)
        self.stf = stf

    def runtest(self) -> None:
        from innet.switch.stf import run_stf
        from innet.switch.stf_dialect import program_for

        p4 = program_for(self.stf)
        if not p4.is_file():
            raise StfFailure(f"{self.stf}: no program {p4.name} next to it")
        result = run_stf(p4, self.stf)
        if not result.passed:
            raise StfFailure(result.message)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        from innet.switch.frontend.errors import FrontendError
        from innet.switch.pipeline.errors import PipelineError

        if isinstance(excinfo.value, (StfFailure, FrontendError, PipelineError)):
            return f"{type(excinfo.value).__name__}: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"stf: {self.name}"


class StfFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        yield StfItem.from_parent(self, name=self.path.stem, stf=self.path)


class StfCorpus(pytest.File):
    """Out-of-tree STF files: p4/**/*.stf."""

    def collect(self) -> Iterator[pytest.Item]:
        for stf in sorted((REPO / "p4").rglob("*.stf")):
            yield StfItem.from_parent(self, name=str(stf.relative_to(REPO)), stf=stf)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == ".stf":
        return StfFile.from_parent(parent, path=file_path)
    if file_path == Path(__file__).resolve():
        return StfCorpus.from_parent(parent, path=file_path)
    return None
