"""Runs directories of STF tests through the embedded target and summarises them.

Shared by ``innet conformance``/``innet demo`` and by anyone who wants a report object
rather than pytest items (the pytest collector in tests/conftest.py runs the same files).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent


@dataclass(frozen=True)
class TestResult:
    """One STF file's outcome."""

    name: str
    """Path of the .stf file, relative to its suite."""
    passed: bool
    message: str
    """The runner's message: a summary on success, expected vs got per port on failure."""
    packets: int


@dataclass
class SuiteResult:
    """All STF files of one directory (searched recursively)."""

    directory: Path
    results: list[TestResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def failed(self) -> int:
        return len(self.results) - self.passed

    @property
    def packets(self) -> int:
        return sum(r.packets for r in self.results)


@dataclass
class SuiteReport:
    suites: list[SuiteResult]
    planned: int = 0
    """STF files found; more than ran when Ctrl-C stopped the run (``interrupted``)."""
    interrupted: bool = False

    @property
    def passed(self) -> int:
        return sum(s.passed for s in self.suites)

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.suites)


def default_suites() -> list[Path]:
    """The repo's own suites; ``tests/conformance`` holds the vendored BMv2-confirmed corpus
    (``tests/conformance/bmv2``)."""
    return [REPO / "p4", REPO / "tests" / "conformance"]


def stf_files(directory: Path) -> list[Path]:
    """Every ``NAME.stf`` and ``NAME.innet.stf`` below ``directory`` with a ``NAME.p4`` beside it."""
    from innet.switch.stf_dialect import program_for

    return sorted(p for p in directory.rglob("*.stf") if program_for(p).is_file())


def run_file(stf: Path, suite: Path, executor: str = "python") -> TestResult:
    from innet.switch.frontend.errors import FrontendError
    from innet.switch.pipeline.errors import PipelineError
    from innet.switch.stf import StfError, read_stf, run_stf
    from innet.switch.stf_dialect import program_for

    name = str(stf.relative_to(suite))
    try:
        packets = len(read_stf(stf).packets)
        result = run_stf(program_for(stf), stf, executor=executor)
    except (FrontendError, PipelineError, StfError) as e:
        return TestResult(name, False, str(e), 0)
    return TestResult(name, result.passed, result.message, packets)


def run_suites(directories: list[Path], executor: str = "python") -> SuiteReport:
    """Every STF file of ``directories`` under a progress bar (a terminal only). Ctrl-C stops
    the run: the report of the files that ran, ``interrupted`` set."""
    from innet.argtypes import Reporter, console

    suites: list[SuiteResult] = []
    files = [(d, f) for d in directories for f in stf_files(d)]
    report = SuiteReport(suites, planned=len(files))
    with Reporter(console(), "STF tests", total=len(files)) as progress:
        try:
            for d in directories:
                suite = SuiteResult(d)
                suites.append(suite)
                start = time.perf_counter()
                try:
                    for f in (f for sd, f in files if sd == d):
                        suite.results.append(run_file(f, d, executor))
                        progress.advance()
                finally:
                    suite.seconds = time.perf_counter() - start
        except KeyboardInterrupt:
            report.interrupted = True
    return report
