"""Collects STF tests as pytest items.

Every ``tests/**/*.stf`` file is collected where pytest walks, the BMv2-confirmed corpus
in ``tests/conformance/bmv2`` included (vendored from ``../shared/conformance``, which
``tests/unit/test_bmv2_corpus.py`` keeps it equal to when that directory exists);
``p4/**/*.stf`` are collected through this conftest when pytest walks ``tests/``. Each item
is named after its ``.stf`` file and runs the same-named ``.p4`` next to it.

Every STF test runs on both executors as separate items, ``<name>[python]`` (the
reference) and ``<name>[native]`` (generated C). A program the native executor refuses
must be listed in ``tests/conformance/native_refusals.txt``: its native item is then an
xfail whose reason is the located refusal; an unlisted refusal fails the item.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

REPO = Path(__file__).resolve().parent.parent


class StfFailure(Exception):
    """An STF test whose outputs differ from the expected ones."""


EXECUTORS = ("python", "native")
REFUSALS = REPO / "tests" / "conformance" / "native_refusals.txt"


def native_refusals() -> dict[str, str]:
    """Program path (relative to the repo) -> text its native refusal must contain."""
    out: dict[str, str] = {}
    for line in REFUSALS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            path, _, text = line.partition(": ")
            out[path.strip()] = text.strip()
    return out


class StfItem(pytest.Item):
    def __init__(self, *, stf: Path, executor: str = "python", **kw: Any) -> None:
        super().__init__(**kw)
        self.stf = stf
        self.executor = executor

    def runtest(self) -> None:
        from innet.switch.stf import run_stf
        from innet.switch.stf_dialect import program_for

        p4 = program_for(self.stf)
        if not p4.is_file():
            raise StfFailure(f"{self.stf}: no program {p4.name} next to it")
        if self.executor == "native":
            from innet.native_build import compiler_path
            from innet.switch.native.errors import NativeUnsupported

            if compiler_path() is None:
                pytest.skip("native executor: no C compiler (cc/gcc) on this machine")
            expected = native_refusals().get(str(p4.relative_to(REPO)))
            try:
                result = run_stf(p4, self.stf, executor="native")
            except NativeUnsupported as refusal:
                if expected is not None and expected in str(refusal):
                    pytest.xfail(f"native executor refuses (listed in {REFUSALS.name}): {refusal}")
                raise
            if expected is not None:
                raise StfFailure(f"{p4} is listed in {REFUSALS.name} but the native executor now runs it: "
                                 "remove the line")
        else:
            result = run_stf(p4, self.stf)
        if not result.passed:
            raise StfFailure(result.message)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        from innet.switch.frontend.errors import FrontendError
        from innet.switch.pipeline.errors import PipelineError

        if isinstance(excinfo.value, PipelineError) and self.executor == "native":
            return f"{type(excinfo.value).__name__} (native executor, not in {REFUSALS.name}): {excinfo.value}"

        if isinstance(excinfo.value, (StfFailure, FrontendError, PipelineError)):
            return f"{type(excinfo.value).__name__}: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"stf: {self.name}"


class StfFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        for ex in EXECUTORS:
            yield StfItem.from_parent(self, name=f"{self.path.stem}[{ex}]", stf=self.path, executor=ex)


class StfCorpus(pytest.File):
    """Out-of-tree STF files: p4/**/*.stf."""

    def collect(self) -> Iterator[pytest.Item]:
        for stf in sorted((REPO / "p4").rglob("*.stf")):
            for ex in EXECUTORS:
                yield StfItem.from_parent(self, name=f"{stf.relative_to(REPO)}[{ex}]", stf=stf, executor=ex)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == ".stf":
        return StfFile.from_parent(parent, path=file_path)
    if file_path == Path(__file__).resolve():
        return StfCorpus.from_parent(parent, path=file_path)
    return None


@pytest.fixture
def bmv2_tools() -> Any:
    """BMv2's tools (simple_switch_grpc, simple_switch_CLI, p4c-bm2-ss); the test is skipped,
    naming what is missing, on a machine without them (the real-BMv2 tier)."""
    from innet.testbed.backends.bmv2 import Bmv2Missing, find_tools

    try:
        return find_tools(need_cli=True)
    except Bmv2Missing as missing:
        pytest.skip(str(missing))
