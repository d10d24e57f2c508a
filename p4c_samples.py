"""Runs p4c's own v1model STF samples (a checkout of ``testdata/p4_16_samples``) through
the embedded target and groups the failures by reason.

The denominator is a vendored list of sample names (``tests/conformance/
bmv2/p4c-samples-bmv2-pass.txt``): the programs real BMv2 passes through p4c's
``run-bmv2-test.py``. The programs themselves stay in p4c's tree; innet only keeps their
names. A sample that fails, for whatever reason (a located front-end error, an output
mismatch, or a bug that raised something unexpected), is a result, not a crash of the run.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from innet.conformance import REPO

SAMPLE_LIST = REPO / "tests" / "conformance" / "bmv2" / "p4c-samples-bmv2-pass.txt"
_LOCATION = re.compile(r"^[^\s:]+(?::\d+)*:\s*")


class SamplesDirError(Exception):
    """The samples directory is missing or does not look like p4c's ``p4_16_samples``."""


@dataclass(frozen=True)
class SampleResult:
    name: str
    """The sample's path relative to the samples directory (``foo-bmv2.p4``)."""
    passed: bool
    message: str
    """Empty on success; the runner's message otherwise (first line = the reason)."""

    @property
    def reason(self) -> str:
        """The first line of the message without its ``file:line:col:`` prefix, so that
        failures of one construct in different samples group together."""
        first = self.message.splitlines()[0] if self.message else ""
        return _LOCATION.sub("", first, count=1).removeprefix("error: ").strip()


@dataclass(frozen=True)
class SamplesReport:
    directory: Path
    results: tuple[SampleResult, ...]

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    def failures_by_reason(self) -> dict[str, list[str]]:
        """Reason -> names of the failing samples, largest group first."""
        groups: dict[str, list[str]] = defaultdict(list)
        for r in self.results:
            if not r.passed:
                groups[r.reason].append(r.name)
        return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def sample_names(path: Path = SAMPLE_LIST) -> list[str]:
    """Names from a list file: one per line, ``#`` comments and blank lines ignored."""
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def resolve_samples_dir(directory: Path) -> Path:
    """``directory`` itself, or its ``testdata/p4_16_samples`` (a p4c checkout)."""
    for cand in (directory, directory / "testdata" / "p4_16_samples"):
        if cand.is_dir() and any(cand.glob("*.stf")):
            return cand
    raise SamplesDirError(f"{directory} holds no p4c samples (no *.stf in it or in its testdata/p4_16_samples)")


def run_sample(directory: Path, name: str, executor: str = "python") -> SampleResult:
    from innet.conformance import run_file

    p4 = directory / name
    stf = p4.with_suffix(".stf")
    if not (p4.is_file() and stf.is_file()):
        return SampleResult(name, False, f"{name}: sample missing from {directory}")
    try:
        r = run_file(stf, directory, executor)
    except Exception as e:  # a bug in innet: report it as a failure of this sample
        return SampleResult(name, False, f"internal error: {type(e).__name__}: {e}")
    return SampleResult(name, r.passed, "" if r.passed else r.message)


def run_samples(directory: Path, names: list[str] | None = None, executor: str = "python") -> SamplesReport:
    """Run every named sample found in ``directory`` (see ``resolve_samples_dir``)."""
    d = resolve_samples_dir(directory)
    names = sample_names() if names is None else names
    return SamplesReport(d, tuple(run_sample(d, n, executor) for n in names))
